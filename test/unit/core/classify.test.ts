import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { classifyAttempt } from '../../../functions/core/classify';
import { TransportError, UpstreamHttpError } from '../../../functions/core/errors';
import { storedResultOf } from '../../../functions/core/result-record';
import type { ToolSpec } from '../../../functions/core/tool-spec';

const tool = (over: Partial<ToolSpec>): ToolSpec => ({
  name: 't',
  description: 't',
  inputSchema: z.object({}),
  outputSchema: z.object({ id: z.string() }),
  risk: 'read',
  timeoutMs: 1000,
  maxAttempts: 3,
  supportsIdempotency: false,
  approval: 'never',
  execute: async () => ({ id: 'x' }),
  ...over,
});
const read = tool({});
const idempotentWrite = tool({ risk: 'irreversible_write', supportsIdempotency: true });
const plainWrite = tool({ risk: 'irreversible_write', maxAttempts: 1 });
const fail = (thrown: unknown) => ({ ok: false as const, thrown });

describe('outcome classification (error matrix)', () => {
  it('validates successful output against the output schema', () => {
    expect(classifyAttempt(read, { ok: true, value: { id: 'a' } })).toEqual({ kind: 'succeeded', result: storedResultOf({ id: 'a' }) });
    // A tool that returned is never timeout_unknown: output that fails its schema is invalid_output.
    expect(classifyAttempt(read, { ok: true, value: { nope: 1 } })).toMatchObject({ kind: 'failed_permanent', code: 'invalid_output' });
    expect(classifyAttempt(plainWrite, { ok: true, value: { nope: 1 } })).toMatchObject({
      kind: 'outcome_unknown',
      code: 'invalid_output',
    });
  });

  it('429 and 502/503/504 are retryable, keeping Retry-After', () => {
    expect(classifyAttempt(idempotentWrite, fail(new UpstreamHttpError(429, undefined, 7, 'x')))).toMatchObject({
      kind: 'failed_retryable',
      code: 'rate_limited',
      retryAfterSeconds: 7,
      upstreamStatus: 429,
    });
    for (const status of [502, 503, 504]) {
      expect(classifyAttempt(plainWrite, fail(new UpstreamHttpError(status, undefined, undefined, 'x')))).toMatchObject({
        kind: 'failed_retryable',
        code: 'upstream_unavailable',
      });
    }
  });

  it('a 500 after a write is unknown unless replaying is safe', () => {
    expect(classifyAttempt(plainWrite, fail(new UpstreamHttpError(500, undefined, undefined, 'x')))).toMatchObject({
      kind: 'outcome_unknown',
    });
    expect(classifyAttempt(idempotentWrite, fail(new UpstreamHttpError(500, undefined, undefined, 'x')))).toMatchObject({
      kind: 'failed_retryable',
    });
    expect(classifyAttempt(read, fail(new UpstreamHttpError(500, undefined, undefined, 'x')))).toMatchObject({ kind: 'failed_retryable' });
  });

  it('other 4xx are permanent', () => {
    expect(classifyAttempt(idempotentWrite, fail(new UpstreamHttpError(402, 'card_declined', undefined, 'x')))).toMatchObject({
      kind: 'failed_permanent',
      code: 'permanent_failure',
      upstreamStatus: 402,
    });
    expect(classifyAttempt(read, fail(new UpstreamHttpError(404, undefined, undefined, 'x')))).toMatchObject({ kind: 'failed_permanent' });
  });

  it('a write that may have been sent is outcome_unknown, never failed', () => {
    for (const reason of ['timeout', 'reset', 'aborted'] as const) {
      expect(classifyAttempt(idempotentWrite, fail(new TransportError(reason, true, 'x')))).toMatchObject({
        kind: 'outcome_unknown',
        code: 'timeout_unknown',
      });
      expect(classifyAttempt(plainWrite, fail(new TransportError(reason, true, 'x')))).toMatchObject({ kind: 'outcome_unknown' });
      expect(classifyAttempt(read, fail(new TransportError(reason, true, 'x')))).toMatchObject({ kind: 'failed_retryable' });
    }
  });

  it('a connection that was refused sent nothing: retryable for everyone', () => {
    expect(classifyAttempt(plainWrite, fail(new TransportError('refused', false, 'x')))).toMatchObject({
      kind: 'failed_retryable',
      code: 'upstream_unavailable',
    });
  });

  it('unexpected exceptions (even non-errors) are unknown for writes, retryable for reads', () => {
    expect(classifyAttempt(plainWrite, fail('boom'))).toMatchObject({ kind: 'outcome_unknown' });
    expect(classifyAttempt(read, fail({ weird: true }))).toMatchObject({ kind: 'failed_retryable' });
  });
});
