import type { LambdaClient } from '@aws-sdk/client-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaToolHost } from '../../functions/adapters/tool-function';
import { classifyAttempt } from '../../functions/core/classify';
import { crossError } from '../../functions/core/tool-invocation';
import { UpstreamHttpError } from '../../functions/core/errors';
import type { ToolContext } from '../../functions/core/tool-spec';
import { toolSpec } from '../support/records';

/** A Lambda client that answers each `send` with what `answer` returns (or throws), recording the invocations. */
function fakeClient(answer: (payload: unknown) => unknown) {
  const sent: { input: { FunctionName: string; InvocationType: string; Payload: string }; options: unknown }[] = [];
  const client = {
    send: async (command: { input: { FunctionName: string; InvocationType: string; Payload: string } }, options: unknown) => {
      sent.push({ input: command.input, options });
      return answer(JSON.parse(command.input.Payload));
    },
  } as unknown as LambdaClient;
  return { client, sent };
}

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const statuses: number[] = [];
const ctx = (): ToolContext => ({
  idempotencyKey: 'key_1',
  attempt: 2,
  deadline: Date.now() + 5_000,
  signal: new AbortController().signal,
  onUpstreamStatus: (s) => statuses.push(s),
  fetch,
});
const call = { action: 'execute' as const, tool: 'charge_card', operationId: 'op_1', arguments: '{"amount":1}' };
const write = toolSpec({ risk: 'irreversible_write' });

describe('the Tools function as a tool host', () => {
  it('sends one synchronous invocation with the attempt’s key, number and remaining time, and returns the value', async () => {
    const { client, sent } = fakeClient(() => ({
      StatusCode: 200,
      Payload: encode({ ok: true, value: { id: 'ch_1' }, upstreamStatus: 201 }),
    }));
    const host = lambdaToolHost(client, 'tools-fn', new Set(['charge_card']));
    expect(host.hosts('charge_card')).toBe(true);
    expect(host.hosts('mcp_upstream_tool')).toBe(false);
    await expect(host.run(call, ctx())).resolves.toEqual({ id: 'ch_1' });
    expect(sent[0].input).toMatchObject({ FunctionName: 'tools-fn', InvocationType: 'RequestResponse' });
    const payload = JSON.parse(sent[0].input.Payload);
    expect(payload).toMatchObject({ ...call, idempotencyKey: 'key_1', attempt: 2 });
    expect(payload.timeoutMs).toBeGreaterThan(4_000);
    expect(payload.timeoutMs).toBeLessThanOrEqual(5_000);
    expect(statuses).toContain(201);
  });

  it('rethrows the tool’s own error with its name and fields', async () => {
    const thrown = new UpstreamHttpError(402, 'card_declined', undefined, 'declined');
    const { client } = fakeClient(() => ({ StatusCode: 200, Payload: encode({ ok: false, error: crossError(thrown) }) }));
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    expect(classifyAttempt(write, { ok: false, thrown: error })).toEqual(classifyAttempt(write, { ok: false, thrown }));
  });

  it('a function that failed as a whole may have acted: a write’s outcome is unknown', async () => {
    const { client } = fakeClient(() => ({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: encode({ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out' }),
    }));
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'ToolFunctionError' });
    expect(classifyAttempt(write, { ok: false, thrown: error })).toMatchObject({ kind: 'outcome_unknown' });
  });

  it('Lambda refusing the invocation means the tool never ran: retryable, even for a write', async () => {
    const { client } = fakeClient(() => {
      throw Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException', $metadata: { httpStatusCode: 429 } });
    });
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'TransportError', reason: 'refused', requestSent: false });
    expect(classifyAttempt(write, { ok: false, thrown: error })).toMatchObject({ kind: 'failed_retryable' });
  });

  it('no answer (the connection broke) after sending: the write’s outcome is unknown', async () => {
    const { client } = fakeClient(() => {
      throw Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET' });
    });
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'TransportError', reason: 'reset', requestSent: true });
    expect(classifyAttempt(write, { ok: false, thrown: error })).toMatchObject({ kind: 'outcome_unknown' });
  });

  it('an answer in an unknown shape is the function’s failure, not a value', async () => {
    const { client } = fakeClient(() => ({ StatusCode: 200, Payload: new TextEncoder().encode('not json') }));
    await expect(lambdaToolHost(client, 'f', new Set(['charge_card'])).run(call, ctx())).rejects.toMatchObject({
      name: 'ToolFunctionError',
    });
  });

  it('a tool the function refuses before running it (not in its module, arguments its schema refuses) failed for certain', async () => {
    for (const reason of ['unknown_tool', 'invalid_arguments'] as const) {
      const { client } = fakeClient(() => ({
        StatusCode: 200,
        Payload: encode({ ok: false, refused: { reason, message: `tool charge_card: ${reason}` } }),
      }));
      const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
        .run(call, ctx())
        .catch((e: Error) => e);
      expect(error).toMatchObject({ name: 'ToolRefusedError', reason });
      // Not run: a definite failure, neither reconciled nor sent to a person, and not sent again to the same function.
      expect(classifyAttempt(write, { ok: false, thrown: error })).toEqual({
        kind: 'failed_permanent',
        code: 'permanent_failure',
        message: `the tools function refused the call before running it: tool charge_card: ${reason}`,
      });
    }
  });

  it('an error a tool throws under the refusal’s name is still the tool’s own: a write’s outcome stays unknown', async () => {
    const thrown = Object.assign(new Error('I never ran, honest'), { name: 'ToolRefusedError', reason: 'unknown_tool' });
    const { client } = fakeClient(() => ({ StatusCode: 200, Payload: encode({ ok: false, error: crossError(thrown) }) }));
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    expect(classifyAttempt(write, { ok: false, thrown: error })).toMatchObject({ kind: 'outcome_unknown' });
  });

  it('a result over 5 MiB answered by its size and hash is invalid_output, with both in the message', async () => {
    const omitted = { bytes: 5 * 1024 * 1024 + 1, sha256: `sha256:${'ab'.repeat(32)}` };
    const { client } = fakeClient(() => ({ StatusCode: 200, Payload: encode({ ok: true, result_omitted: omitted, upstreamStatus: 200 }) }));
    const error = await lambdaToolHost(client, 'f', new Set(['charge_card']))
      .run(call, ctx())
      .catch((e: Error) => e);
    const message = `the tool's output cannot be recorded: it is larger than 5 MiB (5242881 bytes, sha256:${'ab'.repeat(32)})`;
    expect(classifyAttempt(toolSpec({ risk: 'read' }), { ok: false, thrown: error })).toEqual({
      kind: 'failed_permanent',
      code: 'invalid_output',
      message,
    });
    expect(classifyAttempt(write, { ok: false, thrown: error })).toEqual({ kind: 'outcome_unknown', code: 'invalid_output', message });
  });
});
