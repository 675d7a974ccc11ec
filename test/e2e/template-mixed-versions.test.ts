import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AwsCall } from '../../local/template/aws-gateway';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

const MiB = 1024 * 1024;
const sha256Of = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
/** The canonical JSON of `sized_report`'s result for `bytes`: a string of `bytes - 2` x's in quotes. */
const reportJson = (bytes: number) => JSON.stringify('x'.repeat(bytes - 2));

// Template mode only: the stack built from the synthesized template, its functions bundling a tools module
// that differs between the callers and `Tools` as two deploys of it would mid-update (test/fixtures/mixed-version-tools.ts).
describe.runIf(handlerMode === 'template')('mixed versions: what Tools refuses or cannot carry is never "may have acted"', () => {
  let stack: TestStack;
  const invokes: AwsCall[] = [];
  beforeAll(async () => {
    stack = await startTestStack({
      toolsEntry: 'test/fixtures/mixed-version-tools.ts',
      meter: { awsCall: (call) => (call.service === 'lambda' ? invokes.push(call) : undefined) },
    });
  }, 300_000);
  afterAll(async () => stack?.stop());

  const lifecycle = (events: { type: string; operationId?: string; detail?: Record<string, unknown> }[], operationId: string) =>
    events.filter((e) => e.operationId === operationId).map((e) => e.type);

  it('callers invoke the version of Tools deployed with them, never the function a deploy updates first', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_small', name: 'sized_report', arguments: { bytes: 10 } });
    expect(reply.body).toMatchObject({ status: 'succeeded', result: 'xxxxxxxx' });
    expect(invokes.length).toBeGreaterThan(0);
    for (const call of invokes) expect(call.resources).toEqual([expect.stringMatching(/:function:[^:]+ToolsFunction[^:]+:\d+$/)]);
    expect(stack.denials).toEqual([]);
  });

  it('a tool the Tools module no longer has: refused at validation, never run, with no reconciliation and no person', async () => {
    // Callers learn the tools from the Tools version deployed with them (its description), and ask it at
    // validation: a tool its module lacks is refused there, before any attempt (the attempt-time refusal of an
    // older caller is in test/unit/tool-function.test.ts).
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_retired', name: 'retired_charge', arguments: { amount: 5 } });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'rejected', code: 'unknown_tool', message: 'there is no tool named retired_charge' });
    const types = lifecycle(await api.trace(keys.agent, runId), reply.body.logical_operation_id);
    expect(types).not.toContain('attempt.started');
    expect(types).not.toContain('reconcile.started');
  });

  it('arguments the Tools module’s tightened schema refuses: refused at validation, never run', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_capped', name: 'capped_charge', arguments: { amount: 50 } });
    // The tightened schema is the one Tools validates with: refused at validation, never run.
    expect(reply.body).toMatchObject({
      status: 'rejected',
      code: 'invalid_arguments',
      message: 'amount: Too big: expected number to be <=10',
    });
    const types = lifecycle(await api.trace(keys.agent, runId), reply.body.logical_operation_id);
    expect(types).not.toContain('attempt.started');
    expect(types).not.toContain('reconcile.started');
    // Within both schemas it runs as ever.
    const ok = await api.call(keys.agent, runId, { callId: 'call_capped_ok', name: 'capped_charge', arguments: { amount: 7 } });
    expect(ok.body).toMatchObject({ status: 'succeeded', result: { charged: 7 } });
  });

  it('a result of 5 MiB is recorded whole; past the tool’s maxResultBytes the envelope omits it, as before', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_5mib', name: 'sized_report', arguments: { bytes: 5 * MiB } });
    expect(reply.body).toMatchObject({ status: 'succeeded', result_omitted: { bytes: 5 * MiB, sha256: sha256Of(reportJson(5 * MiB)) } });
  });

  it.each([
    ['5 MiB + 1', 5 * MiB + 1],
    ['7 MiB, over Lambda’s 6 MB response', 7 * MiB],
  ])('a result of %s is invalid_output, told by its size and hash, never a failure that may have acted', async (_, bytes) => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: `call_${bytes}`, name: 'sized_report', arguments: { bytes } });
    expect(reply.body).toMatchObject({
      status: 'failed',
      code: 'invalid_output',
      message: `the tool's output cannot be recorded: it is larger than 5 MiB (${bytes} bytes, ${sha256Of(reportJson(bytes))})`,
    });
    const events = await api.trace(keys.agent, runId);
    const finished = events.filter((e) => e.type === 'attempt.finished');
    expect(finished).toEqual([
      expect.objectContaining({ detail: expect.objectContaining({ outcome: 'failed_permanent', code: 'invalid_output' }) }),
    ]);
  });
});
