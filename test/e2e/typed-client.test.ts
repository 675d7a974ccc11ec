import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../functions/api/openapi';
import { ToolRunnerError } from '../../functions/client';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.stop());

describe('the typed client against the running API', () => {
  it('covers a run: tools, a call and its replay, the operation, the trace, cancellation', async () => {
    const agent = stack.api.client(stack.keys.agent);
    const tools = await agent.listTools('openai');
    expect(tools.map((t) => (t as { function: { name: string } }).function.name)).toContain('get_order');

    const run = await agent.createRun({ budgets: { maxToolCalls: 5 }, metadata: { purpose: 'client test' } });
    expect(run).toMatchObject({
      status: 'open',
      budgets: { maxToolCalls: 5 },
      usage: { toolCalls: 0 },
      metadata: { purpose: 'client test' },
    });

    const call = { callId: 'call_c1', turn: 1, name: 'get_order', arguments: { orderId: 'ord_3' } };
    const first = await agent.callTool(run.runId, call, { waitSeconds: 20 });
    const second = await agent.callTool(run.runId, call, { waitSeconds: 20 });
    expect(first).toMatchObject({
      kind: 'envelope',
      replayed: false,
      envelope: { status: 'succeeded', call_id: 'call_c1', result: { id: 'ord_3' } },
    });
    expect(second).toMatchObject({ kind: 'envelope', replayed: true });
    if (first.kind !== 'envelope') throw new Error('expected an envelope');

    const op = await agent.getOperation(first.envelope.logical_operation_id);
    expect(op).toMatchObject({ state: 'reported', toolName: 'get_order', attempts: 1, envelope: first.envelope });
    expect(await agent.waitForOperation(op.operationId, { timeoutSeconds: 5 })).toEqual(first.envelope);
    const trace = await agent.getTrace(run.runId);
    // Strictly increasing; a write that lost a race (here the replay's create) may leave a gap.
    const seqs = trace.map((e) => e.seq);
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
    expect((await agent.getRun(run.runId)).usage.toolCalls).toBe(1);

    expect((await agent.cancelRun(run.runId)).status).toBe('cancelled');
    await expect(agent.callTool(run.runId, { ...call, callId: 'call_c2' })).rejects.toMatchObject({ status: 409, code: 'run_closed' });
  });

  it('answers pending for a call that waits for a person, and waitForOperation returns its envelope once approved', async () => {
    const agent = stack.api.client(stack.keys.agent);
    const approver = stack.api.client(stack.keys.approver);
    const { runId } = await agent.createRun();
    const pending = await agent.callTool(
      runId,
      { callId: 'call_big', turn: 1, name: 'charge_card', arguments: { amount: 75_000, currency: 'USD', customer: 'cus_9' } },
      { waitSeconds: 20 },
    );
    expect(pending).toMatchObject({ kind: 'pending', state: 'awaiting_approval' });
    if (pending.kind !== 'pending') throw new Error('expected pending');
    expect(pending.statusUrl).toBe(`/v1/operations/${pending.operationId}`);
    await expect(agent.waitForOperation(pending.operationId, { timeoutSeconds: 0.3 })).rejects.toMatchObject({ code: 'timeout' });

    const approval = (await approver.listApprovals()).find((a) => a.operationId === pending.operationId)!;
    expect(approval).toMatchObject({ runId, toolName: 'charge_card', requestedBy: 'agent' });
    const sig = new URL(approval.url).searchParams.get('sig');
    const decided = await stack.api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } });
    expect(decided.status).toBe(200);
    expect(await agent.waitForOperation(pending.operationId, { timeoutSeconds: 30 })).toMatchObject({
      status: 'succeeded',
      call_id: 'call_big',
    });
  });

  it('throws ToolRunnerError with the API’s status and code', async () => {
    const agent = stack.api.client(stack.keys.agent);
    const error = await agent.getRun('run_missing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolRunnerError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
    await expect(stack.api.client('tr_not_a_key_at_all').createRun()).rejects.toMatchObject({ status: 401, code: 'unauthenticated' });
    await expect(stack.api.client(stack.keys.approver).createRun()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });
});

describe('routes without a bearer key', () => {
  it('serves the OpenAPI document and health openly, and still asks every other route for a key', async () => {
    const doc = await stack.api.request('GET', '/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect((await stack.api.request('GET', '/v1/health')).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/v1/tools'],
      ['GET', '/v1/approvals'],
      ['POST', '/v1/runs'],
      ['GET', '/v1/runs/run_x/trace'],
      ['GET', '/v1/openapi.json/x'],
    ]) {
      const res = await stack.api.request(method, path);
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 401 });
    }
    // The approval link authenticates by signature, not by key: a bad signature is refused by the link, not the key check.
    expect((await stack.api.request('GET', '/v1/approvals/apr_unknown?sig=bogus')).status).not.toBe(401);
  });
});
