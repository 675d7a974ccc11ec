import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { seeded } from '../support/seeded';
import { handlerMode } from '../support/target';

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_starved', description: 'annual plan' };
const POOL = 20;
const POLLERS = 24;
/** The construct's default `maxWaitingPolls`: requests that may wait idle at once, across every API instance. */
const WAITING = 2;
/**
 * `STARVATION_WITHOUT_BOUND=1` runs the same test on the template without the API's `TOOLRUNNER_MAX_WAITING_POLLS`
 * (the defaults before the bound: nothing reserved, every poll waits): then it fails, the polls holding the pool.
 */
const withoutBound = process.env.STARVATION_WITHOUT_BOUND === '1';

// Template mode only: the account's concurrency pool and Lambda's throttling exist only there.
describe.runIf(handlerMode === 'template')("people's long polls cannot starve the workers", () => {
  let stack: TestStack;
  beforeAll(async () => {
    const saved = process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY;
    process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY = String(POOL);
    try {
      stack = await startTestStack(
        withoutBound
          ? {
              editTemplate: (template) => {
                for (const r of Object.values(template.Resources as Record<string, { Properties?: Record<string, any> }>))
                  delete r.Properties?.Environment?.Variables?.TOOLRUNNER_MAX_WAITING_POLLS;
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

  it("an approved call runs while more callers long-poll than the pool holds: beyond the runner's 2 waiting slots they are answered at once", async () => {
    const { api, keys } = stack;
    const account = stack.aws!.account;
    // The defaults reserve nothing: every function shares the account's 20.
    expect(account.reservations.size).toBe(0);
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
    /** Each poll's start and end, and whether it was answered at once for want of a slot (`Retry-After`). */
    const spans: { start: number; end: number; status: number; noSlot: boolean }[] = [];
    const jitter = seeded(20261203);
    const pollers = Array.from({ length: POLLERS }, async (_, i) => {
      // People's clients arrive over time, not in one instant: 24 requests in the same millisecond would take 24
      // of the account's 20 on AWS too (each a fresh instance), a burst no bound on idle waits can stop.
      await new Promise((r) => setTimeout(r, i * 400 + jitter() * 400));
      while (polling) {
        const start = Date.now();
        const reply = await api.call(keys.agent, runId, blocked, 25);
        const retryAfter = reply.status === 202 ? Number(reply.headers.get('retry-after') ?? Number.NaN) : Number.NaN;
        spans.push({ start, end: Date.now(), status: reply.status, noSlot: Number.isFinite(retryAfter) });
        answers.set(reply.status, (answers.get(reply.status) ?? 0) + 1);
        // As a client honouring the answer: one answered at once for want of a slot comes back after its
        // Retry-After; one whose wait ended, at once; each with a pause of its own (up to a second) so that
        // the many clients do not ask in step, and a refused request (API Gateway's 500) a second later.
        const pause = (Number.isFinite(retryAfter) ? retryAfter * 1_000 : 0) + jitter() * 1_000 + (reply.status >= 500 ? 1_000 : 0);
        await new Promise((r) => setTimeout(r, pause));
      }
    });
    try {
      // Some callers wait their 25 s in the slots; the others are answered at once, and poll again.
      await api.until(
        'the slots to be full and the other pollers answered 202 at once',
        // Without the bound none is answered at once: the polls take the account's pool (the API throttles).
        async () => (withoutBound ? throttled(/^Api$/) : spans.filter((p) => p.noSlot && p.end - p.start < 5_000).length),
        (n) => n >= (withoutBound ? 1 : POLLERS),
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
    // Never more than the slots waited at once. A poll that got a slot waits its whole 25 s from taking it, so its
    // slot was held in the 25 s before it answered (less a second at either end for the way in and out); a
    // request queued on its way in (a cold start) does not lengthen that.
    const waits = spans.filter((p) => p.status === 202 && !p.noSlot);
    expect(waits.length).toBeGreaterThan(0);
    for (const w of waits) expect(w.end - w.start).toBeGreaterThanOrEqual(24_000);
    const edges = waits.flatMap((w) => [
      { at: w.end - 24_000, step: 1 },
      { at: w.end - 1_000, step: -1 },
    ]);
    let atOnce = 0;
    let now = 0;
    for (const e of edges.sort((a, b) => a.at - b.at || a.step - b.step)) {
      now += e.step;
      atOnce = Math.max(atOnce, now);
    }
    expect(atOnce).toBeLessThanOrEqual(WAITING);
    // The others were answered at once, told when to come back; none of the answers was anything but 202.
    const quick = spans.filter((p) => p.noSlot);
    expect(quick.length).toBeGreaterThan(waits.length);
    expect([...answers.keys()]).toEqual([202]);
    // Execute ran it; neither it nor Tools, sharing the pool with the API, was squeezed out by the polls.
    expect({ Execute: throttled(/^Execute$/), Reconcile: throttled(/^Reconcile$/), Tools: throttled(/^Tools$/) }).toEqual({
      Execute: 0,
      Reconcile: 0,
      Tools: 0,
    });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_starved')).toHaveLength(1);
  }, 300_000);
});
