import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { seeded } from '../support/seeded';
import { handlerMode } from '../support/target';

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_starved', description: 'annual plan' };
const POOL = 20;
const POLLERS = 24;
/**
 * `STARVATION_WITHOUT_RESERVATIONS=1` runs the same test on the template with every `ReservedConcurrentExecutions`
 * removed (as it was before the construct reserved any): then it fails, the workers throttled behind the polls.
 */
const withoutReservations = process.env.STARVATION_WITHOUT_RESERVATIONS === '1';

// Template mode only: the account's concurrency pool and Lambda's throttling exist only there.
describe.runIf(handlerMode === 'template')("people's long polls cannot starve the workers", () => {
  let stack: TestStack;
  beforeAll(async () => {
    const saved = process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY;
    process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY = String(POOL);
    try {
      stack = await startTestStack(
        withoutReservations
          ? {
              editTemplate: (template) => {
                for (const r of Object.values(template.Resources as Record<string, { Properties?: Record<string, unknown> }>))
                  delete r.Properties?.ReservedConcurrentExecutions;
              },
            }
          : {},
      );
    } finally {
      if (saved === undefined) delete process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY;
      else process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY = saved;
    }
  }, 240_000);
  afterAll(async () => stack?.stop());

  it('an approved call runs while more callers long-poll than the API may hold: the API is throttled, Execute is not', async () => {
    const { api, keys } = stack;
    const account = stack.aws!.account;
    /** Throttles of the template's functions by construct name (`Api`, `Execute`, ...). */
    const throttled = (pattern: RegExp) =>
      Object.entries(account.throttlesByFunction())
        .filter(([id]) => pattern.test(id.replace(/^Runner|Function[0-9A-F]{8}$/g, '')))
        .reduce((sum, [, n]) => sum + n, 0);
    const runId = await api.createRun(keys.agent);

    // A charge that waits for its approver.
    const held = await api.call(keys.agent, runId, { callId: 'call_big', name: 'charge_card', arguments: bigCharge }, 0);
    expect(held.status).toBe(202);
    const operationId = held.body.operationId as string;
    await api.until(
      'the charge to wait for its approver',
      async () => stack.deps!.store.getOperation(operationId),
      (o) => o?.state === 'awaiting_approval' && o.approval?.state === 'pending',
      60_000,
    );
    // The pending list is an index query (eventually consistent): listed within a moment.
    const approval = (await api.until(
      'the approval to be listed',
      async () =>
        (
          (
            await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver })
          ).body.approvals as {
            operationId: string;
            approvalId: string;
            url: string;
          }[]
        ).find((a) => a.operationId === operationId),
      (found) => found !== undefined,
      15_000,
    ))!;

    // A call blocked on a held lock, which its callers long-poll (each holds an API instance for the whole wait),
    // more of them than the API's ceiling.
    const orderId = 'ord_polled';
    expect(await stack.deps!.store.acquireLock(`update_shipping_address:${orderId}`, 'op_holder', 600_000, Date.now())).toBe(true);
    const blocked = {
      callId: 'call_polled',
      name: 'update_shipping_address',
      arguments: { orderId, address: { line1: '1 Main Street', city: 'Springfield', postalCode: '10001', country: 'US' } },
    };
    expect((await api.call(keys.agent, runId, blocked, 0)).status).toBe(202);
    let polling = true;
    const answers = new Map<number, number>();
    const jitter = seeded(20261203);
    const pollers = Array.from({ length: POLLERS }, async () => {
      while (polling) {
        const reply = await api.call(keys.agent, runId, blocked, 25);
        answers.set(reply.status, (answers.get(reply.status) ?? 0) + 1);
        // Many clients, not one loop: each polls again after a pause of its own (up to a second), a refused one a
        // second later still. Pollers that re-asked within the same millisecond would hold the API's every instance
        // between them for good, and the approver's click below, which shares the ceiling, would rarely get in.
        const pause = jitter() * 1_000 + (reply.status >= 500 ? 1_000 : 0);
        await new Promise((r) => setTimeout(r, pause));
      }
    });
    try {
      await api.until(
        'the API to be throttled by its pollers',
        async () => throttled(/^Api$/),
        (n) => n > 0,
        60_000,
      );

      // The approver clicks; a throttled request (API Gateway's 500) is clicked again, as a person would.
      const sig = new URL(approval.url).searchParams.get('sig');
      await api.until(
        'the approval to get through',
        async () => (await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status,
        (status) => status === 200,
        60_000,
      );
      const done = await api.until(
        'the approved charge to run while the polls go on',
        async () => stack.deps!.store.getOperation(operationId),
        (o) => o?.state === 'reported',
        90_000,
      );
      expect(done).toMatchObject({ outcome: { kind: 'succeeded' }, attempts: 1 });
      expect(polling).toBe(true);
    } finally {
      polling = false;
      await Promise.all(pollers);
    }
    // The API was held at its ceiling (its extra callers got API Gateway's 500); the workers never were throttled.
    expect(throttled(/^Api$/)).toBeGreaterThan(0);
    expect(answers.get(500) ?? 0).toBeGreaterThan(0);
    // Execute ran it; Tools, in the unreserved rest, was never squeezed out by the polls. (The sweeper may throttle
    // itself: the test's half-second schedule overlaps its own runs beyond its reservation, then Lambda retries them.)
    expect({ Execute: throttled(/^Execute$/), Reconcile: throttled(/^Reconcile$/), Tools: throttled(/^Tools$/) }).toEqual({
      Execute: 0,
      Reconcile: 0,
      Tools: 0,
    });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_starved')).toHaveLength(1);
  }, 300_000);
});
