import { describe, expect, it } from 'vitest';
import { classifyAttempt } from '../../../functions/core/classify';
import { TransportError, UpstreamHttpError } from '../../../functions/core/errors';
import { crossError, restoreError, ToolAnswerSchema, ToolInvocationSchema } from '../../../functions/core/tool-invocation';
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
});
