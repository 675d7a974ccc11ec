import { GetExecutionHistoryCommand, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isActive } from '../../functions/core/record-predicates';
import { isEmbedded } from '../support/target';
import { shape, startTestStack, type TestStack } from '../support/stack';

/**
 * The four ways the first version broke off the happy path, each as it was reported: a pending approval
 * across a restart, a cancel racing an approval, one busy run, and a replayed write landing late.
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.stop());

const bigCharge = (customer: string) => ({ amount: 75_000, currency: 'USD', customer });

async function approvalLink(approverKey: string, operationId: string): Promise<string> {
  const list = await stack.api.until(
    'the approval to be listed',
    () => stack.api.request('GET', '/v1/approvals?status=pending', { key: approverKey }),
    (r) => (r.body.approvals ?? []).some((a: { operationId: string }) => a.operationId === operationId),
  );
  return list.body.approvals.find((a: { operationId: string }) => a.operationId === operationId).url;
}

async function decide(url: string, decision: 'approve' | 'reject') {
  const u = new URL(url);
  return stack.api.request('POST', u.pathname, { body: { decision, sig: u.searchParams.get('sig') } });
}

/** How often each state was entered in an execution, from the engine's own history. */
async function statesEntered(executionName: string): Promise<Record<string, number>> {
  const sfn = new SFNClient({ endpoint: process.env.AWS_ENDPOINT_URL_SFN });
  try {
    const executionArn = `${stack.stateMachineArn!.replace(':stateMachine:', ':execution:')}:${executionName}`;
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    const counts: Record<string, number> = {};
    for (const e of history.events ?? []) {
      const name = (e as { stateEnteredEventDetails?: { name?: string } }).stateEnteredEventDetails?.name;
      if (name) counts[name] = (counts[name] ?? 0) + 1;
    }
    return counts;
  } finally {
    sfn.destroy();
  }
}

describe.runIf(isEmbedded)('a pending approval across a restart', () => {
  it('keeps its request, its expiry and its one notification, waits without looping, and executes once when approved', async () => {
    const { keys } = stack;
    const runId = await stack.api.createRun(keys.agent);
    const submitted = await stack.api.call(
      keys.agent,
      runId,
      { callId: 'call_restart_ok', name: 'charge_card', arguments: bigCharge('cus_restart') },
      0,
    );
    const opId = submitted.body.operationId;
    const before = await stack.api.until(
      'the approval to be requested',
      () => stack.api.operation(keys.agent, opId),
      (o) => o.approval?.state === 'pending',
    );

    const oldToken = (await stack.deps!.store.getOperation(opId))!.approvalTaskToken;
    const recovered = await stack.restart!();
    expect(recovered).toContain(opId);
    // The resumed execution waits again with a token of its own (the old one died with the process).
    await stack.api.until(
      'the resumed wait',
      () => stack.deps!.store.getOperation(opId),
      (o) => Boolean(o?.approvalTaskToken) && o!.approvalTaskToken !== oldToken,
    );
    const waiting = await stack.api.operation(keys.agent, opId);
    // Give a hot loop the chance to show itself: after a while the execution has still entered the wait once.
    const version = (await stack.deps!.store.getOperation(opId))!.version;
    const until = Date.now() + 1500;
    await stack.api.until(
      '1.5 s of waiting',
      async () => Date.now(),
      (t) => t >= until,
    );
    expect((await stack.deps!.store.getOperation(opId))!.version).toBe(version);
    expect(waiting.approval.expiresAt).toBe(before.approval.expiresAt);
    expect(shape(await stack.api.trace(keys.agent, runId), opId).filter((t) => t === 'approval.requested')).toHaveLength(1);
    const entered = await statesEntered(`${opId}-r1`);
    expect(entered.AwaitApproval).toBe(1);

    // Deciding while the resumed execution waits: no crash, one execution of the charge.
    const url = await approvalLink(keys.approver, opId);
    expect((await decide(url, 'approve')).status).toBe(200);
    const done = await stack.api.until(
      'reported',
      () => stack.api.operation(keys.agent, opId),
      (o) => o.state === 'reported',
    );
    expect(done.envelope).toMatchObject({ status: 'succeeded', result: { amount: 75_000 } });
    expect((await stack.sandbox.ledger()).filter((e) => e.body?.customer === 'cus_restart')).toHaveLength(1);
    expect((await stack.api.request('GET', '/v1/health')).status).toBe(200);
  });

  it('expires on time after a restart', async () => {
    const { keys } = stack;
    stack.editConfig((c) => {
      c.approvalTtlSeconds = 4;
    });
    try {
      const runId = await stack.api.createRun(keys.agent);
      const submitted = await stack.api.call(
        keys.agent,
        runId,
        { callId: 'call_restart_expiry', name: 'charge_card', arguments: bigCharge('cus_expiry') },
        0,
      );
      const opId = submitted.body.operationId;
      const pending = await stack.api.until(
        'the approval to be requested',
        () => stack.api.operation(keys.agent, opId),
        (o) => o.approval?.state === 'pending',
      );
      await stack.restart!();
      const expired = await stack.api.until(
        'the approval to expire',
        () => stack.api.operation(keys.agent, opId),
        (o) => o.state === 'reported',
        30_000,
      );
      expect(expired.envelope).toMatchObject({ status: 'rejected', code: 'approval_expired' });
      const trace = await stack.api.trace(keys.agent, runId);
      const decided = trace.find((e) => e.type === 'approval.decided' && e.operationId === opId)!;
      // On time: not before its expiry, and within a few seconds after it (not minutes, as the hot loop did).
      expect(Date.parse(decided.at)).toBeGreaterThanOrEqual(Date.parse(pending.approval.expiresAt) - 1000);
      expect(Date.parse(decided.at) - Date.parse(pending.approval.expiresAt)).toBeLessThan(10_000);
      expect(shape(trace, opId).filter((t) => t === 'approval.requested')).toHaveLength(1);
    } finally {
      stack.editConfig((c) => {
        c.approvalTtlSeconds = 86400;
      });
    }
  });
});

describe.runIf(isEmbedded)('a cancel racing an approval', () => {
  it('never hides a real charge: whatever wins, a committed charge is the result or a recorded late result', async () => {
    const { keys } = stack;
    for (let i = 0; i < 8; i++) {
      const runId = await stack.api.createRun(keys.agent);
      const customer = `cus_race_${i}`;
      const submitted = await stack.api.call(
        keys.agent,
        runId,
        { callId: `call_race_${i}`, name: 'charge_card', arguments: bigCharge(customer) },
        0,
      );
      const opId = submitted.body.operationId;
      const url = await approvalLink(keys.approver, opId);
      const gap = i * 1.5;
      await Promise.all([
        decide(url, 'approve'),
        new Promise((r) => setTimeout(r, gap)).then(() => stack.api.request('POST', `/v1/operations/${opId}/cancel`, { key: keys.agent })),
      ]);
      // Settled: reported, and no cancelled attempt still owes its answer.
      await stack.api.until(
        `race ${i} to settle`,
        () => stack.deps!.store.getOperation(opId),
        (o) => Boolean(o) && !isActive(o!),
        30_000,
      );
      const charged = (await stack.sandbox.ledger()).filter((e) => e.body?.customer === customer);
      expect(charged.length).toBeLessThanOrEqual(1);
      if (charged.length === 1) {
        const op = await stack.api.operation(keys.agent, opId);
        const kept = op.envelope?.status === 'succeeded' || op.lateOutcome?.kind === 'succeeded';
        expect(kept, `race ${i}: charged but ${op.state}/${op.envelope?.status} late=${JSON.stringify(op.lateOutcome)}`).toBe(true);
        expect(charged[0].idempotencyKey).toBe(op.idempotencyKey);
      }
    }
  });
});

describe('one busy run', () => {
  it('100 concurrent calls in one run: no 5xx, budgets exact, nothing left for review', async () => {
    const { keys } = stack;
    const runId = await stack.api.createRun(keys.agent, { maxToolCalls: 90 });
    const calls = Array.from({ length: 100 }, (_, i) =>
      i % 5 === 0
        ? {
            callId: `call_busy_${i}`,
            turn: 1 + (i % 7),
            name: 'charge_card',
            arguments: { amount: 100 + i, currency: 'USD', customer: `cus_busy_${i}` },
          }
        : { callId: `call_busy_${i}`, turn: 1 + (i % 7), name: 'get_order', arguments: { orderId: `ord_${1 + (i % 100)}` } },
    );
    const replies = await Promise.all(calls.map((c) => stack.api.call(keys.agent, runId, c, 25)));
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    const envelopes = await Promise.all(
      replies.map((r) =>
        r.status === 200
          ? r.body
          : stack.api
              .until(
                'a pending call',
                () => stack.api.operation(keys.agent, r.body.operationId),
                (o) => Boolean(o.envelope),
                60_000,
              )
              .then((o) => o.envelope),
      ),
    );
    const byStatus: Record<string, number> = {};
    for (const e of envelopes) byStatus[e.status] = (byStatus[e.status] ?? 0) + 1;
    expect(byStatus).toEqual({ succeeded: 90, budget_exhausted: 10 });
    const run = await stack.api.request('GET', `/v1/runs/${runId}`, { key: keys.agent });
    expect(run.body.usage.toolCalls).toBe(90);
    // Turns arrive out of order: only a turn above the highest seen opens one.
    expect(run.body.usage.turns).toBeGreaterThanOrEqual(1);
    expect(run.body.usage.turns).toBeLessThanOrEqual(7);
    const reviews = envelopes.filter((e) => e.status === 'outcome_unknown');
    expect(reviews).toEqual([]);
    const trace = await stack.api.trace(keys.agent, runId);
    const seqs = trace.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  }, 180_000);
});

describe('a replayed write never lands after a later one', () => {
  it('the lock is held from the first attempt until the outcome is recorded: update A retried after a 503 finishes before update B', async () => {
    const { keys } = stack;
    const runId = await stack.api.createRun(keys.agent);
    const address = (line1: string) => ({ orderId: 'ord_42', address: { line1, city: 'Lyon', postalCode: '69001', country: 'FR' } });
    await stack.sandbox.fault({ route: 'PUT /v1/orders/{id}/shipping-address', mode: 'fail_503', count: 1 });
    const a = await stack.api.call(
      keys.agent,
      runId,
      { callId: 'call_update_a', name: 'update_shipping_address', arguments: address('1 Rue A') },
      0,
    );
    const opA = a.body.operationId;
    await stack.api.until(
      'A to fail once and wait',
      () => stack.api.trace(keys.agent, runId),
      (events) => events.some((e) => e.operationId === opA && e.type === 'backoff.scheduled'),
    );
    const b = await stack.api.call(
      keys.agent,
      runId,
      { callId: 'call_update_b', name: 'update_shipping_address', arguments: address('2 Rue B') },
      25,
    );
    expect(b.body.status).toBe('succeeded');
    const doneA = await stack.api.until(
      'A reported',
      () => stack.api.operation(keys.agent, opA),
      (o) => o.state === 'reported',
    );
    expect(doneA.envelope.status).toBe('succeeded');
    const order = await (await fetch(`${stack.sandboxUrl}/v1/orders/ord_42`)).json();
    expect(order.shippingAddress.line1).toBe('2 Rue B');
    const trace = await stack.api.trace(keys.agent, runId);
    const recordedA = trace.find((e) => e.operationId === opA && e.type === 'result.recorded')!;
    const startedB = trace.find((e) => e.operationId === b.body.logical_operation_id && e.type === 'attempt.started')!;
    expect(startedB.seq).toBeGreaterThan(recordedA.seq);
  });
});
