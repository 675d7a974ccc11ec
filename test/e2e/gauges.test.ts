import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../../functions/core/metric-names';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * `ApprovalsWaiting` and `ReviewsOpen` are what the store holds, published by the sweeper: they follow
 * requests, decisions, expiry, reviews and a restart (which empties the in-process registry) exactly.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

function gauges(): { approvals?: number; reviews?: number } {
  const snapshot = stack.deps!.metrics!.snapshot!();
  const value = (name: string) => snapshot.find((s) => s.name === name && Object.keys(s.dimensions).length === 0)?.value;
  return { approvals: value(MetricName.approvalsWaiting), reviews: value(MetricName.reviewsOpen) };
}
/** Waits (with a deadline) until the sweeper has published exactly these values. */
async function expectGauges(approvals: number, reviews: number): Promise<void> {
  await stack.api.until(
    `ApprovalsWaiting ${approvals}, ReviewsOpen ${reviews}`,
    async () => gauges(),
    (g) => g.approvals === approvals && g.reviews === reviews,
    30_000,
  );
}

const charge = (i: number) => ({ amount: 123_456, currency: 'EUR', customer: `cus_gauge_${i}`, description: `gauge ${i}` });

describe.skipIf(!isEmbedded)('gauges from the truth', () => {
  it('follow requests, decisions, expiry, reviews and a restart exactly', async () => {
    const { keys, sandbox } = stack;
    const runId = await stack.api.createRun(keys.agent, { maxSpendCents: 100_000_000 });
    const submit = async (i: number) => {
      const res = await stack.api.call(keys.agent, runId, { callId: `call_gauge_${i}`, name: 'charge_card', arguments: charge(i) }, 5);
      expect(res.body.state).toBe('awaiting_approval');
      return res.body.operationId as string;
    };
    const ops = [];
    for (let i = 0; i < 4; i++) ops.push(await submit(i));
    await expectGauges(4, 0);

    const decide = async (operationId: string, decision: 'approve' | 'reject') => {
      const res = await stack.api.request('POST', `/v1/operations/${operationId}/approval`, { key: keys.approver, body: { decision } });
      expect(res.status).toBe(200);
    };
    await decide(ops[0], 'approve');
    await decide(ops[1], 'reject');
    await expectGauges(2, 0);

    // An approval whose time is up waits for no one.
    stack.editConfig((c) => {
      c.approvalTtlSeconds = 2;
    });
    await stack.api.until(
      'the shorter approval TTL to apply',
      async () => (await stack.deps!.config()).approvalTtlSeconds,
      (ttl) => ttl === 2,
    );
    const short = await submit(4);
    expect(Date.parse((await stack.api.operation(keys.agent, short)).approval.expiresAt) - Date.now()).toBeLessThanOrEqual(2_000);
    await expectGauges(2, 0);

    // An email whose outcome is unknown goes to a person: one review open, until a reviewer resolves it.
    await sandbox.fault({ route: 'POST /v1/emails', mode: 'commit_then_timeout', delayMs: 20_000 });
    const mail = await stack.api.call(keys.agent, runId, {
      callId: 'call_gauge_mail',
      name: 'send_email',
      arguments: { to: 'a@example.com', subject: 'Hi', body: 'Hello' },
    });
    expect(mail.body.status).toBe('outcome_unknown');
    await expectGauges(2, 1);

    // A restart empties the in-process registry; the next sweep publishes the same truth, not a drifted count.
    await stack.restart!();
    expect(gauges()).toEqual({ approvals: undefined, reviews: undefined });
    await expectGauges(2, 1);

    const resolved = await stack.api.request('POST', `/v1/operations/${mail.body.logical_operation_id}/resolve`, {
      key: keys.reviewer,
      body: { outcome: 'succeeded', note: 'delivered' },
    });
    expect(resolved.status).toBe(200);
    await decide(ops[2], 'approve');
    await expectGauges(1, 0);
    const answer = await stack.api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    expect(answer.body.approvals.map((a: { operationId: string }) => a.operationId)).toEqual([ops[3]]);
  }, 180_000);
});
