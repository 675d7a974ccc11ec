import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../functions/api/openapi';
import { ToolRunnerError } from '../../functions/client';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';
import { unknownOutcomeEmail } from '../support/scenarios';

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

describe('the people’s verbs: approve, reject, resolveReview, listRuns', () => {
  const charge = (callId: string, amount = 75_000) => ({
    callId,
    turn: 1,
    name: 'charge_card',
    arguments: { amount, currency: 'USD', customer: 'cus_people' },
  });
  async function pendingCharge(ownerKey: string, callId: string) {
    const owner = stack.api.client(ownerKey);
    const { runId } = await owner.createRun();
    const answer = await owner.callTool(runId, charge(callId), { waitSeconds: 20 });
    if (answer.kind !== 'pending') throw new Error(`expected a pending call, got ${JSON.stringify(answer)}`);
    expect(answer.state).toBe('awaiting_approval');
    return { runId, operationId: answer.operationId };
  }

  it('approves and rejects by key, once, under the signed link’s rules', async () => {
    const agent = stack.api.client(stack.keys.agent);
    const approver = stack.api.client(stack.keys.approver);
    const approved = await pendingCharge(stack.keys.agent, 'call_key_ok');
    const rejected = await pendingCharge(stack.keys.agent, 'call_key_no');

    // The run's owner and the requester may not decide: the admin submits into its own run.
    const own = await pendingCharge(stack.keys.admin, 'call_own');
    await expect(stack.api.client(stack.keys.admin).approve(own.operationId)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    // An agent is no approver at all.
    await expect(agent.approve(approved.operationId)).rejects.toMatchObject({ status: 403, code: 'forbidden' });

    expect(await approver.approve(approved.operationId, { reason: 'known customer' })).toEqual({
      approvalId: `apr_${approved.operationId.slice(3)}`,
      operationId: approved.operationId,
      state: 'approved',
    });
    expect(await approver.reject(rejected.operationId)).toMatchObject({ operationId: rejected.operationId, state: 'rejected' });
    // Decided once: neither a second decision nor the other one.
    await expect(approver.reject(approved.operationId)).rejects.toMatchObject({ status: 409, code: 'invalid_state' });
    await expect(approver.approve(rejected.operationId)).rejects.toMatchObject({ status: 409, code: 'invalid_state' });
    // The link says the same: this approval is decided.
    const link = await stack.api.request('POST', `/v1/approvals/apr_${approved.operationId.slice(3)}`, {
      body: { decision: 'reject', sig: 'x.y' },
    });
    expect(link.status).toBe(403);

    expect(await agent.waitForOperation(approved.operationId, { timeoutSeconds: 30 })).toMatchObject({ status: 'succeeded' });
    expect(await agent.waitForOperation(rejected.operationId, { timeoutSeconds: 30 })).toMatchObject({
      status: 'rejected',
      code: 'approval_rejected',
    });
    const op = await agent.getOperation(approved.operationId);
    expect(op.approval).toMatchObject({ state: 'approved', decidedBy: 'approver' });
    const decided = (await agent.getTrace(approved.runId)).find((e) => e.type === 'approval.decided');
    expect(decided).toMatchObject({ operationId: approved.operationId });

    // No such operation; an operation that never needed a person; a malformed body.
    await expect(approver.approve('op_missing')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const { runId } = await agent.createRun();
    const read = await agent.callTool(runId, { callId: 'call_read', turn: 1, name: 'get_order', arguments: { orderId: 'ord_2' } });
    if (read.kind !== 'envelope') throw new Error('expected an envelope');
    await expect(approver.approve(read.envelope.logical_operation_id)).rejects.toMatchObject({ status: 409, code: 'invalid_state' });
    const bad = await stack.api.request('POST', `/v1/operations/${own.operationId}/approval`, {
      key: stack.keys.approver,
      body: { decision: 'maybe' },
    });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    await approver.reject(own.operationId);
  });

  it.runIf(isEmbedded)('refuses a decision once the approval expired', async () => {
    stack.editConfig((c) => (c.approvalTtlSeconds = 2));
    try {
      const agent = stack.api.client(stack.keys.agent);
      const late = await pendingCharge(stack.keys.agent, 'call_late');
      const approval = (await agent.getOperation(late.operationId)).approval!;
      expect(Date.parse(approval.expiresAt) - Date.now()).toBeLessThan(5_000);
      expect(await agent.waitForOperation(late.operationId, { timeoutSeconds: 30 })).toMatchObject({ code: 'approval_expired' });
      await expect(stack.api.client(stack.keys.approver).approve(late.operationId)).rejects.toMatchObject({
        status: 409,
        code: 'invalid_state',
      });
    } finally {
      stack.editConfig((c) => (c.approvalTtlSeconds = 86400));
    }
  });

  it('resolves a review by a person', async () => {
    const { api, keys } = stack;
    const { res } = await unknownOutcomeEmail(stack);
    expect(res.body).toMatchObject({ status: 'outcome_unknown' });
    const operationId = res.body.logical_operation_id as string;
    const reviewer = api.client(keys.reviewer);
    await api.until(
      'the review to be listed',
      () => reviewer.listReviews(),
      (reviews) => reviews.some((r) => r.operationId === operationId),
    );
    await expect(api.client(keys.agent).resolveReview(operationId, { outcome: 'succeeded', note: 'mine' })).rejects.toMatchObject({
      status: 403,
    });
    const resolved = await reviewer.resolveReview(operationId, { outcome: 'succeeded', note: 'seen in the mail log' });
    expect(resolved).toMatchObject({ operationId, review: { resolvedBy: 'reviewer', note: 'seen in the mail log' } });
    await expect(reviewer.resolveReview(operationId, { outcome: 'failed', note: 'again' })).rejects.toMatchObject({
      status: 409,
      code: 'invalid_state',
    });
    expect((await reviewer.listReviews()).map((r) => r.operationId)).not.toContain(operationId);
  });

  it('lists runs newest first, a page at a time: an agent its own, a reviewer and an admin all', async () => {
    const agent = stack.api.client(stack.keys.agent);
    const other = stack.api.client(stack.keys.other);
    const mine: string[] = [];
    for (let i = 0; i < 5; i++) mine.push((await agent.createRun()).runId);
    const theirs = (await other.createRun()).runId;
    await agent.cancelRun(mine[1]);

    const ownPage = await agent.listRuns({ limit: 100 });
    const ownIds = ownPage.runs.map((r) => r.runId);
    expect(ownPage.runs.every((r) => r.owner === 'agent')).toBe(true);
    expect(ownIds).not.toContain(theirs);
    // Newest first: the five just made lead, in reverse order of creation.
    expect(ownIds.slice(0, 5)).toEqual([...mine].reverse());
    expect(ownPage.runs[0]).toEqual({
      runId: mine[4],
      status: 'open',
      owner: 'agent',
      createdAt: expect.stringMatching(/^\d{4}-/),
      usage: { turns: 0, toolCalls: 0, spendCents: 0, modelSpendCents: 0, toolSpendCents: 0, wallClockSeconds: expect.any(Number) },
    });
    expect((await other.listRuns()).runs.map((r) => r.runId)).toEqual([theirs]);

    const cancelled = await agent.listRuns({ status: 'cancelled' });
    expect(cancelled.runs.map((r) => r.runId)).toContain(mine[1]);
    expect(cancelled.runs.every((r) => r.status === 'cancelled')).toBe(true);

    // Pages of two cover every run exactly once, in the same order as one page.
    for (const key of [stack.keys.reviewer, stack.keys.admin]) {
      const client = stack.api.client(key);
      const all = (await client.listRuns({ limit: 100 })).runs.map((r) => r.runId);
      expect(all).toEqual(expect.arrayContaining([...mine, theirs]));
      const paged: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listRuns({ limit: 2, cursor });
        expect(page.runs.length).toBeLessThanOrEqual(2);
        paged.push(...page.runs.map((r) => r.runId));
        cursor = page.nextCursor;
      } while (cursor);
      expect(paged).toEqual(all);
    }

    for (const query of ['limit=0', 'limit=101', 'limit=ten', 'status=done', 'cursor=bogus']) {
      const res = await stack.api.request('GET', `/v1/runs?${query}`, { key: stack.keys.agent });
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({ query, status: 400, code: 'invalid_request' });
    }
    // A cursor of another list is not one of this list.
    const approvalsCursor = Buffer.from(JSON.stringify({ approvalPendingKey: 'pending', createdAt: 'x', operationId: 'op_x' })).toString(
      'base64url',
    );
    expect((await stack.api.request('GET', `/v1/runs?cursor=${approvalsCursor}`, { key: stack.keys.agent })).status).toBe(400);
    await expect(stack.api.client(stack.keys.approver).listRuns()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
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
