import { describe, expect, it } from 'vitest';
import { classifyAttempt } from '../../../functions/core/classify';
import { TransportError, UpstreamHttpError } from '../../../functions/core/errors';
import { createHash } from 'node:crypto';
import { RESULT_LIMITS } from '../../../functions/core/result-record';
import {
  answerOfValue,
  crossError,
  refusal,
  restoreError,
  ToolAnswerSchema,
  ToolInvocationSchema,
} from '../../../functions/core/tool-invocation';
import { toolSpec } from '../../support/records';

describe('what crosses to the Tools function and back', () => {
  it('an error keeps its name, message and primitive fields, never its stack or cause', () => {
    const thrown = Object.assign(new UpstreamHttpError(429, 'rate_limited', 3, 'slow down'), {
      cause: new Error('inner'),
      nested: { a: 1 },
    });
    const crossed = crossError(thrown);
    expect(crossed).toEqual({
      name: 'UpstreamHttpError',
      message: 'slow down',
      fields: { status: 429, code: 'rate_limited', retryAfterSeconds: 3 },
    });
    expect(JSON.stringify(crossed)).not.toContain('at ');
    const restored = restoreError(JSON.parse(JSON.stringify(crossed)));
    expect(restored).toBeInstanceOf(Error);
    expect(restored).toMatchObject({ name: 'UpstreamHttpError', message: 'slow down', status: 429, retryAfterSeconds: 3 });
    expect(crossError('a string')).toEqual({ name: 'Error', message: 'a string', fields: {} });
  });

  it('the classifier sees a restored error exactly as the one thrown: same outcome for reads and writes', () => {
    const write = toolSpec({ risk: 'irreversible_write' });
    const read = toolSpec({ risk: 'read' });
    for (const thrown of [
      new UpstreamHttpError(503, undefined, undefined, 'unavailable'),
      new UpstreamHttpError(429, 'rate_limited', 7, 'slow down'),
      new UpstreamHttpError(400, 'card_declined', undefined, 'declined'),
      new TransportError('timeout', true, 'no answer'),
      new TransportError('refused', false, 'refused'),
      new Error('surprise'),
    ]) {
      const restored = restoreError(JSON.parse(JSON.stringify(crossError(thrown))));
      for (const tool of [write, read])
        expect(classifyAttempt(tool, { ok: false, thrown: restored }), `${tool.risk} ${thrown.message}`).toEqual(
          classifyAttempt(tool, { ok: false, thrown }),
        );
    }
  });

  it('invocations and answers are validated: nothing unknown crosses', () => {
    const invocation = {
      action: 'execute',
      tool: 'charge_card',
      arguments: '{"amount":1}',
      operationId: 'op_1',
      idempotencyKey: 'key',
      attempt: 1,
      timeoutMs: 5000,
    };
    expect(ToolInvocationSchema.parse(invocation)).toEqual(invocation);
    expect(ToolInvocationSchema.safeParse({ ...invocation, action: 'delete' }).success).toBe(false);
    expect(ToolInvocationSchema.safeParse({ ...invocation, extra: 1 }).success).toBe(false);
    expect(ToolInvocationSchema.safeParse({ ...invocation, timeoutMs: 0 }).success).toBe(false);
    expect(ToolAnswerSchema.safeParse({ ok: true, value: { a: 1 }, upstreamStatus: 200 }).success).toBe(true);
    expect(ToolAnswerSchema.safeParse({ ok: false, error: { name: 'E', message: 'm', fields: { x: {} } } }).success).toBe(false);
    expect(ToolAnswerSchema.safeParse({ value: 1 }).success).toBe(false);
  });

  it('a result up to 5 MiB crosses whole; one byte more crosses as its size and hash, never as the value', () => {
    // A JSON string of n bytes: the quotes and n - 2 characters.
    const ofBytes = (n: number) => 'x'.repeat(n - 2);
    const limit = RESULT_LIMITS.maxRecordedBytes;
    const whole = answerOfValue(ofBytes(limit), 200);
    expect(whole).toMatchObject({ ok: true, upstreamStatus: 200 });
    expect((whole as { value: string }).value).toHaveLength(limit - 2);

    const over = ofBytes(limit + 1);
    const answer = answerOfValue(over, 201);
    const sha256 = `sha256:${createHash('sha256').update(JSON.stringify(over)).digest('hex')}`;
    expect(answer).toEqual({ ok: true, result_omitted: { bytes: limit + 1, sha256 }, upstreamStatus: 201 });
    expect(ToolAnswerSchema.parse(JSON.parse(JSON.stringify(answer)))).toEqual(answer);
    expect(JSON.stringify(answer).length).toBeLessThan(300);
  });

  it('a value JSON cannot carry crosses as a malformed answer (invalid_output), not as a crash of the function', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const answer = answerOfValue(cyclic, undefined);
    expect(answer).toMatchObject({ ok: false, error: { name: 'MalformedAnswerError', message: expect.stringContaining('cycle') } });
    const write = toolSpec({ risk: 'irreversible_write' });
    const read = toolSpec({ risk: 'read' });
    const thrown = restoreError((answer as { error: Parameters<typeof restoreError>[0] }).error);
    expect(classifyAttempt(read, { ok: false, thrown })).toMatchObject({ kind: 'failed_permanent', code: 'invalid_output' });
    expect(classifyAttempt(write, { ok: false, thrown })).toMatchObject({ kind: 'outcome_unknown', code: 'invalid_output' });
  });

  it('a refusal crosses as its own answer, apart from any error a tool throws', () => {
    const answer = refusal('unknown_tool', 'tool gone is not in this function’s tools module');
    expect(ToolAnswerSchema.parse(answer)).toEqual({ ok: false, refused: { reason: 'unknown_tool', message: expect.any(String) } });
    expect(ToolAnswerSchema.safeParse({ ok: false, refused: { reason: 'tired', message: 'x' } }).success).toBe(false);
  });
});
