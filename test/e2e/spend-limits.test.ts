import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKeyOf, periodsAt } from '../../functions/core/spend-limits';
import { startTestStack, type TestStack } from '../support/stack';

/** A principal's spend limit per UTC day across its runs, held by DynamoDB's conditional transactions. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 4920 });
  stack.editConfig((c) => {
    // 1 cent per thousand output tokens.
    c.modelPrices = { 'acme/flat': { inputPerMillionCents: 0, outputPerMillionCents: 1_000 } };
    c.spendLimits = [{ principal: 'agent', perDayCents: 20 }];
    c.modelCallLeaseSeconds = 30;
  });
});
afterAll(async () => stack?.stop());

describe('spendLimits on DynamoDB', () => {
  it('never lets concurrent calls of two runs of one principal pass perDayCents', async () => {
    const { api, keys } = stack;
    await stack.sandbox.reset();
    const runs = [await api.createRun(keys.agent, { maxSpendCents: 1000 }), await api.createRun(keys.agent, { maxSpendCents: 1000 })];
    // 12 reservations of 2 cents and 8 charges of 1 cent: 32 cents asked of a 20-cent day.
    const reservations = Array.from({ length: 12 }, (_, i) =>
      api.request('POST', `/v1/runs/${runs[i % 2]}/model-calls`, {
        key: keys.agent,
        body: { requestId: `race-${i}`, model: 'acme/flat', inputTokens: 0, maxOutputTokens: 2000 },
      }),
    );
    const charges = Array.from({ length: 8 }, (_, i) =>
      api.call(keys.agent, runs[i % 2]!, {
        callId: `c${i}`,
        name: 'charge_card',
        arguments: { amount: 1, currency: 'USD', customer: 'cus_1' },
      }),
    );
    const [reserved, charged] = await Promise.all([Promise.all(reservations), Promise.all(charges)]);
    const made = reserved.filter((r) => r.status === 201).length;
    const refusedReservations = reserved.filter((r) => r.status === 200);
    expect(refusedReservations.every((r) => r.body.status === 'refused' && r.body.code === 'spend_limit')).toBe(true);
    expect(refusedReservations[0]?.body.message).toMatch(
      /"agent" is 20 cents per day \(spendLimits\).*it resets at \d{4}-\d\d-\d\dT00:00:00\.000Z$/,
    );
    const ran = charged.filter((c) => c.body.status === 'succeeded').length;
    const refusedCalls = charged.filter((c) => c.body.status !== 'succeeded');
    expect(refusedCalls.every((c) => c.body.status === 'budget_exhausted' && c.body.code === 'spend_limit')).toBe(true);
    // Never past the cap, and only refused where nothing more fitted (a 1-cent call may leave a cent a reservation cannot use).
    expect(2 * made + ran).toBeLessThanOrEqual(20);
    expect(2 * made + ran).toBeGreaterThanOrEqual(19);
    expect(refusedReservations.length + refusedCalls.length).toBeGreaterThan(0);
    // The sandbox charged exactly the calls admitted; the counter holds what both runs hold.
    expect((await stack.sandbox.ledger()).length).toBe(ran);
    const ref = { principalId: 'agent', period: 'day' as const, periodKey: periodsAt(Date.now()).day.key, expiresAtEpoch: 0 };
    const counters = await stack.deps!.store.getSpendCounters([ref]);
    expect(counters[counterKeyOf(ref)]).toBe((2 * made + ran) * 1_000_000);
    for (const runId of runs) expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.status).toBe('open');
    // Each threshold of the day's limit told once across both runs' traces, however the writes interleaved.
    const told = (await Promise.all(runs.map((runId) => api.trace(keys.agent, runId!))))
      .flat()
      .filter((e) => e.type === 'budget.threshold' && e.detail?.scope === 'principal');
    expect(told.map((e) => e.detail?.percent).sort()).toEqual(2 * made + ran === 20 ? [100, 50, 80] : [50, 80]);
  });
});

/** Polls `read` until it answers, up to a deadline. */
async function waitFor<T>(read: () => Promise<T | undefined>, options: { timeoutMs: number; what: string }): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("the embedded stack's sweeper", () => {
  it('charges an unsettled reservation in full after its lease and traces model_call.expired', async () => {
    const { api, keys } = stack;
    // Another principal than the one whose day the test above may have spent to its last cent.
    const runId = await api.createRun(keys.other, { maxSpendCents: 1000 });
    const reserved = await api.request('POST', `/v1/runs/${runId}/model-calls`, {
      key: keys.other,
      body: { requestId: 'left', model: 'acme/flat', inputTokens: 0, maxOutputTokens: 3000 },
    });
    expect(reserved.body.reservedCents).toBe(3);
    const realNow = Date.now;
    // The lease (30 s) runs out for the sweeper; nothing settles the call.
    stack.deps!.now = () => realNow() + 31_000;
    try {
      const expired = await waitFor(async () => (await api.trace(keys.other, runId)).find((e) => e.type === 'model_call.expired'), {
        timeoutMs: 30_000,
        what: 'the sweeper to expire the reservation',
      });
      expect(expired.detail).toEqual({ modelCallId: reserved.body.modelCallId, model: 'acme/flat', chargedCents: 3 });
      expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.other })).body.usage).toMatchObject({
        spendCents: 3,
        modelSpendCents: 3,
      });
    } finally {
      stack.deps!.now = realNow;
    }
  });
});
