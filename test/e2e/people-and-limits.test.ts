import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signLink } from '../../functions/core/approval-link';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce } from '../support/target';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 3 });
});
afterAll(async () => stack?.stop());
beforeEach(async () => stack.sandbox.reset());

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_big', description: 'annual plan' };

async function pendingApproval(runId: string, callId: string) {
  const { api, keys } = stack;
  const submitted = await api.call(keys.agent, runId, { callId, name: 'charge_card', arguments: bigCharge });
  expect(submitted.status).toBe(202);
  expect(submitted.body.state).toBe('awaiting_approval');
  // The pending list is an index query, eventually consistent on DynamoDB: a just-requested approval may take
  // a moment to be listed, as a person refreshing the console would see.
  const approval = await api.until(
    'the approval to be listed',
    async () =>
      (await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver })).body.approvals.find(
        (a: { operationId: string }) => a.operationId === submitted.body.operationId,
      ),
    (found) => found !== undefined,
    15_000,
  );
  return { opId: submitted.body.operationId as string, approval };
}

describe('approvals by task token', () => {
  it('approval rejected: the tool never starts', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    const { opId, approval } = await pendingApproval(runId, 'call_reject');
    const sig = new URL(approval.url).searchParams.get('sig');
    const res = await api.request('POST', `/v1/approvals/${approval.approvalId}`, {
      body: { decision: 'reject', reason: 'not this month', sig },
    });
    expect(res).toMatchObject({ status: 200, body: { approvalId: approval.approvalId, operationId: opId, state: 'rejected' } });
    const op = await api.until(
      'reported',
      () => api.operation(keys.agent, opId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'rejected', code: 'approval_rejected' });
    expect(op.approval).toMatchObject({ state: 'rejected', decidedBy: 'approver' });
    expect(shape(await api.trace(keys.agent, runId))).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      // 75,000 of the run's default 100,000 cents, reserved at admission: half the budget is spoken for.
      'budget.threshold',
      'validated>awaiting_approval',
      'approval.requested',
      'approval.decided',
      'awaiting_approval>rejected',
      'result.recorded',
      'rejected>reported',
      'result.reported',
    ]);
    // The approver's reason is in the trace, for the operator.
    expect((await api.trace(keys.agent, runId)).find((e) => e.type === 'approval.decided')!.detail).toEqual({
      approvalId: approval.approvalId,
      decision: 'reject',
      approverId: 'approver',
      reason: 'not this month',
    });
    expect(await sandbox.ledger()).toEqual([]);
  });

  it('approved: executes once; the link is single-use, signed, and never for the requester', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    const { opId, approval } = await pendingApproval(runId, 'call_approve');
    expect(approval).toMatchObject({
      toolName: 'charge_card',
      arguments: bigCharge,
      requestedBy: 'agent',
      runId,
      inputHash: expect.stringMatching(/^sha256:/),
    });
    const sig = new URL(approval.url).searchParams.get('sig')!;

    // GET shows the page and decides nothing (mail scanners prefetch links).
    const page = await api.request('GET', `/v1/approvals/${approval.approvalId}?sig=${encodeURIComponent(sig)}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('75000');
    expect((await api.operation(keys.agent, opId)).approval.state).toBe('pending');

    expect(
      (await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig: `${sig}x` } })).status,
    ).toBe(403);
    expect((await api.request('GET', `/v1/approvals/${approval.approvalId}?sig=bogus`)).status).toBe(403);

    const approved = await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } });
    expect(approved.body.state).toBe('approved');
    expect((await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status).toBe(409);

    const op = await api.until(
      'reported',
      () => api.operation(keys.agent, opId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'succeeded', result: { amount: 75_000 } });
    expect(shape(await api.trace(keys.agent, runId))).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      // 75,000 of the run's default 100,000 cents, reserved at admission: half the budget is spoken for.
      'budget.threshold',
      'validated>awaiting_approval',
      'approval.requested',
      'approval.decided',
      'awaiting_approval>executing',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(await sandbox.ledger()).toHaveLength(1);
    // The token stays server-side: nothing the API returns carries it.
    expect(JSON.stringify(op)).not.toMatch(/taskToken|approvalTaskToken/);
  });

  it('the requester cannot approve its own operation, even holding the approver role', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.admin);
    const submitted = await api.call(keys.admin, runId, { callId: 'call_self', name: 'charge_card', arguments: bigCharge });
    expect(submitted.body.state).toBe('awaiting_approval');
    const listed = await api.request('GET', '/v1/approvals?status=pending', { key: keys.admin });
    expect(listed.body.approvals.some((a: { operationId: string }) => a.operationId === submitted.body.operationId)).toBe(false);
    const op = await api.operation(keys.admin, submitted.body.operationId);
    const config = JSON.parse(readFileSync(stack.configPath, 'utf8'));
    const own = signLink(config.approvalSecret, {
      approvalId: op.approval.approvalId,
      approverId: 'admin',
      expiresAt: Date.parse(op.approval.expiresAt),
      inputHash: op.inputHash,
    });
    const selfApproval = await api.request('POST', `/v1/approvals/${op.approval.approvalId}`, { body: { decision: 'approve', sig: own } });
    expect(selfApproval.status).toBe(403);
    expect(selfApproval.body.error.message).toContain('requester');
    expect((await api.operation(keys.admin, submitted.body.operationId)).approval.state).toBe('pending');
  });

  // Both change the principals file, which only the embedded stack reads.
  it.runIf(configEditsApplyAtOnce)('a permission revoked while the approval waits stops the approved call before any attempt', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    const { opId, approval } = await pendingApproval(runId, 'call_revoked');
    stack.editConfig((c) => (c.principals.find((p) => p.id === 'agent')!.tools = ['get_order']));
    try {
      const sig = new URL(approval.url).searchParams.get('sig');
      expect((await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status).toBe(200);
      const op = await api.until(
        'reported',
        () => api.operation(keys.agent, opId),
        (o) => o.state === 'reported',
      );
      expect(op.envelope).toMatchObject({ status: 'rejected', code: 'forbidden' });
      const events = await api.trace(keys.agent, runId);
      expect(events.some((e) => e.type === 'attempt.started')).toBe(false);
      expect(shape(events).slice(-5)).toEqual([
        'approval.decided',
        'awaiting_approval>rejected',
        'result.recorded',
        'rejected>reported',
        'result.reported',
      ]);
      expect(await sandbox.ledger()).toEqual([]);
    } finally {
      stack.editConfig((c) => (c.principals.find((p) => p.id === 'agent')!.tools = '*'));
    }
  });

  it.runIf(configEditsApplyAtOnce)('an approval nobody decides expires as approval_expired', async () => {
    const { api, keys, sandbox } = stack;
    stack.editConfig((c) => (c.approvalTtlSeconds = 2));
    try {
      const runId = await api.createRun(keys.agent);
      const { opId } = await pendingApproval(runId, 'call_expire');
      const op = await api.until(
        'expired',
        () => api.operation(keys.agent, opId),
        (o) => o.state === 'reported',
        30_000,
      );
      expect(op.envelope).toMatchObject({ status: 'rejected', code: 'approval_expired' });
      expect(op.approval.state).toBe('expired');
      expect(shape(await api.trace(keys.agent, runId)).slice(-6)).toEqual([
        'approval.requested',
        'approval.decided',
        'awaiting_approval>rejected',
        'result.recorded',
        'rejected>reported',
        'result.reported',
      ]);
      expect(await sandbox.ledger()).toEqual([]);
    } finally {
      stack.editConfig((c) => (c.approvalTtlSeconds = 86400));
    }
  });
});

describe('budgets', () => {
  it('N concurrent calls against a tool-call budget of M run exactly M', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxToolCalls: 3 });
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.call(keys.agent, runId, { callId: `call_b${i}`, name: 'get_order', arguments: { orderId: `ord_${i + 1}` } }),
      ),
    );
    const statuses = replies.map((r) => r.body.status);
    expect(
      replies.map((r) => r.status),
      JSON.stringify(replies.map((r) => r.body)),
    ).toEqual(Array(8).fill(200));
    expect(
      statuses.filter((s) => s === 'succeeded'),
      JSON.stringify(replies.map((r) => r.body)),
    ).toHaveLength(3);
    expect(statuses.filter((s) => s === 'budget_exhausted')).toHaveLength(5);
    const run = await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent });
    expect(run.body).toMatchObject({ status: 'budget_exhausted', usage: { toolCalls: 3 } });
    const events = await api.trace(keys.agent, runId);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'budget.exhausted')).toHaveLength(1);
  });

  it('a call refused for its arguments counts against the tool-call budget: it was admitted, recorded and answered', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxToolCalls: 2 });
    const bad = await api.call(keys.agent, runId, { callId: 'call_r1', name: 'get_order', arguments: { order: 'ord_1' } });
    const good = await api.call(keys.agent, runId, { callId: 'call_r2', name: 'get_order', arguments: { orderId: 'ord_1' } });
    const over = await api.call(keys.agent, runId, { callId: 'call_r3', name: 'get_order', arguments: { orderId: 'ord_2' } });
    expect([bad, good, over].map((r) => [r.body.status, r.body.code ?? null])).toEqual([
      ['rejected', 'invalid_arguments'],
      ['succeeded', null],
      ['budget_exhausted', 'budget_exhausted'],
    ]);
    const run = await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent });
    expect(run.body).toMatchObject({ status: 'budget_exhausted', usage: { toolCalls: 2 } });
  });

  it('the model keeps requesting tools: it stops at the turn budget, and every later call gets budget_exhausted', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxTurns: 2 });
    const replies = [];
    for (let turn = 1; turn <= 4; turn++)
      replies.push(
        await api.call(keys.agent, runId, { callId: `call_t${turn}`, turn, name: 'get_order', arguments: { orderId: 'ord_1' } }),
      );
    expect(replies.map((r) => r.body.status)).toEqual(['succeeded', 'succeeded', 'budget_exhausted', 'budget_exhausted']);
    expect(replies[2].body).toMatchObject({ code: 'budget_exhausted', allowed_next_actions: ['stop'] });
    const events = await api.trace(keys.agent, runId);
    expect(shape(events, replies[2].body.logical_operation_id)).toEqual([
      'operation.proposed',
      'budget.exhausted',
      'proposed>budget_exhausted',
      'result.recorded',
      'budget_exhausted>reported',
      'result.reported',
    ]);
    expect(shape(events, replies[3].body.logical_operation_id)).toEqual([
      'operation.proposed',
      'proposed>budget_exhausted',
      'result.recorded',
      'budget_exhausted>reported',
      'result.reported',
    ]);
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.status).toBe('budget_exhausted');
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(2);
    expect(await stack.sandbox.ledger()).toEqual([]);
  });

  it('spend is reserved at validation; a call that would exceed it is refused without an attempt', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 1000 });
    const first = await api.call(keys.agent, runId, {
      callId: 'call_s1',
      name: 'charge_card',
      arguments: { amount: 600, currency: 'USD', customer: 'c' },
    });
    const second = await api.call(keys.agent, runId, {
      callId: 'call_s2',
      name: 'charge_card',
      arguments: { amount: 600, currency: 'USD', customer: 'c' },
    });
    expect([first.body.status, second.body.status]).toEqual(['succeeded', 'budget_exhausted']);
    expect(await sandbox.ledger()).toHaveLength(1);
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body).toMatchObject({
      status: 'budget_exhausted',
      usage: { spendCents: 600 },
    });
  });

  it('the wall-clock budget expires the run', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxWallClockSeconds: 1 });
    await api.until(
      'the run to expire',
      () => api.request('GET', `/v1/runs/${runId}`, { key: keys.agent }),
      (r) => r.body.status === 'expired',
      5000,
    );
    const res = await api.call(keys.agent, runId, { callId: 'call_late', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect(res.body).toMatchObject({ status: 'budget_exhausted', code: 'budget_exhausted' });
    expect(res.body.message).toContain('wall-clock');
  });
});

describe('cancellation', () => {
  it('a cancelled run refuses new calls with 409 run_closed', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const cancelled = await api.request('POST', `/v1/runs/${runId}/cancel`, { key: keys.agent });
    expect(cancelled.body.status).toBe('cancelled');
    const res = await api.call(keys.agent, runId, { callId: 'call_closed', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect(res).toMatchObject({ status: 409, body: { error: { code: 'run_closed' } } });
    expect(shape(await api.trace(keys.agent, runId))).toEqual(['run.cancelled']);
  });

  it('a cancelled call that returns late is recorded, not attached to the closed turn', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    // The charge commits and answers after 2 s, well inside the tool's 3 s timeout.
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 2000 });
    const submitted = await api.call(
      keys.agent,
      runId,
      { callId: 'call_cancel', name: 'charge_card', arguments: { amount: 990, currency: 'USD', customer: 'c' } },
      0,
    );
    const opId = submitted.body.operationId;
    // Sent, not only started: `attempt.started` is traced when the intent is recorded, before the request goes out.
    // Where another function sends it (template mode), a cancel that came first would leave nothing to return late
    // (the attempt is never sent, and a lookup then records that it had no effect).
    await api.until(
      'the charge to reach the upstream',
      () => sandbox.ledger(),
      (ledger) => ledger.length === 1,
    );
    const cancel = await api.request('POST', `/v1/operations/${opId}/cancel`, { key: keys.agent });
    expect(cancel.body).toMatchObject({ state: 'reported', envelope: { status: 'cancelled', code: 'cancelled' } });
    expect((await api.request('POST', `/v1/operations/${opId}/cancel`, { key: keys.agent })).status).toBe(409);

    const op = await api.until(
      'the late result',
      () => api.operation(keys.agent, opId),
      (o) => Boolean(o.lateOutcome),
      15_000,
    );
    expect(op.lateOutcome).toEqual({ kind: 'succeeded' });
    expect(op.envelope).toMatchObject({ status: 'cancelled' });
    expect(shape(await api.trace(keys.agent, runId))).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'executing>cancelled',
      'result.recorded',
      'cancelled>reported',
      'result.reported',
      'attempt.finished',
      'result.late',
    ]);
    expect(await sandbox.ledger()).toHaveLength(1);
    // The replayed call still answers with the closed turn's envelope.
    const replay = await api.call(keys.agent, runId, {
      callId: 'call_cancel',
      name: 'charge_card',
      arguments: { amount: 990, currency: 'USD', customer: 'c' },
    });
    expect(replay.body).toMatchObject({ status: 'cancelled' });
  });

  it('cancelling a run cancels the operation waiting for approval', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const { opId, approval } = await pendingApproval(runId, 'call_cancel_wait');
    await api.request('POST', `/v1/runs/${runId}/cancel`, { key: keys.agent });
    const op = await api.operation(keys.agent, opId);
    expect(op).toMatchObject({ state: 'reported', envelope: { status: 'cancelled' } });
    const sig = new URL(approval.url).searchParams.get('sig');
    expect((await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status).toBe(409);
    const list = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    expect(list.body.approvals.some((a: { operationId: string }) => a.operationId === opId)).toBe(false);
  });
});
