import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';

/** Model calls reserved against a run's one spend budget before the call and settled after it, on DynamoDB Local. */
let stack: TestStack;
const realNow = Date.now;
beforeAll(async () => {
  stack = await startTestStack({ seed: 49 });
  stack.editConfig((c) => {
    c.modelPrices = {
      // 1 and 3 cents per thousand tokens (0.1 cached): 1,000 in and 1,000 out reserve 4 cents.
      'acme/tiny': { inputPerMillionCents: 1_000, outputPerMillionCents: 3_000, cachedInputPerMillionCents: 100 },
      // 1 cent per thousand output tokens.
      'acme/flat': { inputPerMillionCents: 0, outputPerMillionCents: 1_000 },
    };
    c.modelCallLeaseSeconds = 30;
  });
});
afterAll(async () => stack?.stop());
beforeEach(async () => {
  stack.deps!.now = realNow;
  await stack.sandbox.reset();
});

const reserve = (runId: string, body: unknown, key = stack.keys.agent) =>
  stack.api.request('POST', `/v1/runs/${runId}/model-calls`, { key, body });
const settle = (runId: string, modelCallId: string, body: unknown, key = stack.keys.agent) =>
  stack.api.request('POST', `/v1/runs/${runId}/model-calls/${modelCallId}/usage`, { key, body });
const modelEvents = async (runId: string) =>
  (await stack.api.trace(stack.keys.agent, runId))
    .filter((e) => e.type.startsWith('model_call.'))
    .map((e) => ({ type: e.type, ...e.detail }));

describe('model calls', () => {
  it('reserves, replays by requestId, settles at the price used, and reports model and tool spend apart', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 1000 });
    const body = { requestId: 'req-1', model: 'acme/tiny', inputTokens: 1000, maxOutputTokens: 1000 };
    const first = await reserve(runId, body);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ modelCallId: expect.stringMatching(/^mc_/), reservedCents: 4 });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await reserve(runId, body);
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([201, first.body, 'true']);
    const other = await reserve(runId, { ...body, maxOutputTokens: 10 });
    expect([other.status, other.body.error.code]).toEqual([409, 'request_id_conflict']);

    const { modelCallId } = first.body;
    const usage = { inputTokens: 500, outputTokens: 200, cachedInputTokens: 100 };
    // 400 uncached, 100 cached and 200 out: 0.4 + 0.01 + 0.6 cents.
    const settled = await settle(runId, modelCallId, usage);
    expect([settled.status, settled.body]).toEqual([
      200,
      { modelCallId, status: 'settled', model: 'acme/tiny', reservedCents: 4, chargedCents: 1.01 },
    ]);
    const replayed = await settle(runId, modelCallId, usage);
    expect([replayed.status, replayed.body, replayed.headers.get('idempotent-replayed')]).toEqual([200, settled.body, 'true']);
    const otherUsage = await settle(runId, modelCallId, { ...usage, outputTokens: 201 });
    expect([otherUsage.status, otherUsage.body.error.code]).toEqual([409, 'invalid_state']);

    // A tool call's whole cents and the model's fractions add up exactly.
    expect(
      (
        await api.call(keys.agent, runId, {
          callId: 'c1',
          name: 'charge_card',
          arguments: { amount: 12, currency: 'USD', customer: 'cus_1' },
        })
      ).body.status,
    ).toBe('succeeded');
    const run = (await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body;
    expect(run.usage).toMatchObject({ spendCents: 13.01, modelSpendCents: 1.01, toolSpendCents: 12 });
    expect(await modelEvents(runId)).toEqual([
      { type: 'model_call.reserved', modelCallId, model: 'acme/tiny', reservedCents: 4, requestId: 'req-1' },
      { type: 'model_call.settled', modelCallId, model: 'acme/tiny', reservedCents: 4, chargedCents: 1.01, ...usage },
    ]);
  });

  it('prices a known model from the bundled prices and reserves its context window when inputTokens are absent', async () => {
    const client = stack.api.client(stack.keys.agent);
    const { runId } = await client.createRun();
    // gpt-4o: 128,000 tokens of context at $2.50 a million, 100 out at $10 a million.
    const reserved = await client.reserveModelCall(runId, { requestId: 'r', model: 'openai/gpt-4o', maxOutputTokens: 100 });
    expect(reserved).toEqual({ status: 'reserved', modelCallId: expect.any(String), reservedCents: 32.1, replayed: false });
    if (reserved.status !== 'reserved') throw new Error('refused');
    const settled = await client.settleModelCall(runId, reserved.modelCallId, { inputTokens: 1000, outputTokens: 100 });
    expect(settled).toEqual({
      modelCallId: reserved.modelCallId,
      status: 'settled',
      model: 'openai/gpt-4o',
      reservedCents: 32.1,
      chargedCents: 0.35,
      replayed: false,
    });
    await expect(client.settleModelCall(runId, reserved.modelCallId, { inputTokens: 1, outputTokens: 1 })).rejects.toMatchObject({
      status: 409,
      code: 'invalid_state',
    });
  });

  it('answers malformed bodies, unpriced models and unknown context windows with 400, and a cancelled run with 409', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    for (const body of [
      {},
      { requestId: 'a', model: 'acme/tiny', maxOutputTokens: 1, extra: true },
      { requestId: 'a', model: 'tiny', maxOutputTokens: 1 },
      { requestId: 'a', model: 'acme/tiny', maxOutputTokens: 0 },
      { requestId: 'a', model: 'acme/tiny', maxOutputTokens: 1.5 },
    ]) {
      const reply = await reserve(runId, body);
      expect([reply.status, reply.body.error.code]).toEqual([400, 'invalid_request']);
    }
    const unpriced = await reserve(runId, { requestId: 'u', model: 'nobody/nothing', maxOutputTokens: 1, inputTokens: 1 });
    expect(unpriced.status).toBe(400);
    expect(unpriced.body.error.message).toContain('modelPrices');
    const noWindow = await reserve(runId, { requestId: 'w', model: 'acme/tiny', maxOutputTokens: 1 });
    expect(noWindow.status).toBe(400);
    expect(noWindow.body.error.message).toContain('inputTokens');
    const ok = await reserve(runId, { requestId: 'k', model: 'acme/tiny', maxOutputTokens: 1, inputTokens: 1 });
    for (const body of [
      { inputTokens: 1 },
      { inputTokens: 1, outputTokens: 1, more: 1 },
      { inputTokens: 1, outputTokens: 1, cachedInputTokens: 2 },
    ]) {
      const reply = await settle(runId, ok.body.modelCallId, body);
      expect([reply.status, reply.body.error.code]).toEqual([400, 'invalid_request']);
    }
    expect((await settle(runId, 'mc_nothing', { inputTokens: 1, outputTokens: 1 })).status).toBe(404);
    expect((await reserve(runId, { requestId: 'x', model: 'acme/tiny', maxOutputTokens: 1, inputTokens: 1 }, keys.other)).status).toBe(403);
    await api.client(keys.agent).cancelRun(runId);
    const closed = await reserve(runId, { requestId: 'c', model: 'acme/tiny', maxOutputTokens: 1, inputTokens: 1 });
    expect([closed.status, closed.body.error.code]).toEqual([409, 'run_closed']);
  });

  it('refuses what does not fit with nothing reserved and the run open; an overrun is charged in full and exhausts the run', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 10 });
    const four = (requestId: string) => reserve(runId, { requestId, model: 'acme/tiny', inputTokens: 1000, maxOutputTokens: 1000 });
    const a = await four('a');
    expect((await four('b')).status).toBe(201);
    const refused = await four('c');
    expect([refused.status, refused.body]).toEqual([
      200,
      { status: 'refused', code: 'budget_exhausted', message: expect.stringContaining('maxSpendCents') },
    ]);
    // A smaller request still fits: 2 cents of 2 left.
    const small = await reserve(runId, { requestId: 'd', model: 'acme/flat', inputTokens: 0, maxOutputTokens: 2000 });
    expect([small.status, small.body.reservedCents]).toEqual([201, 2]);
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.status).toBe('open');

    // The call used far more than it reserved: 10,000 out is 30 cents, charged in full.
    const over = await settle(runId, a.body.modelCallId, { inputTokens: 1000, outputTokens: 10_000 });
    expect(over.body).toMatchObject({ reservedCents: 4, chargedCents: 31 });
    expect((await modelEvents(runId)).filter((e) => e.type === 'model_call.overrun')).toEqual([
      { type: 'model_call.overrun', modelCallId: a.body.modelCallId, model: 'acme/tiny', reservedCents: 4, chargedCents: 31 },
    ]);
    const call = await api.call(keys.agent, runId, { callId: 'after', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect(call.body).toMatchObject({ status: 'budget_exhausted' });
    const refusedAfter = await reserve(runId, { requestId: 'e', model: 'acme/flat', inputTokens: 0, maxOutputTokens: 1 });
    expect(refusedAfter.body).toMatchObject({ status: 'refused', code: 'budget_exhausted' });
  });

  it('never reserves past the cap under concurrent reservations', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 10 });
    const replies = await Promise.all(
      Array.from({ length: 14 }, (_, i) =>
        reserve(runId, { requestId: `race-${i}`, model: 'acme/flat', inputTokens: 0, maxOutputTokens: 1000 }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([...Array(4).fill(200), ...Array(10).fill(201)]);
    expect(replies.filter((r) => r.status === 200).every((r) => r.body.code === 'budget_exhausted')).toBe(true);
    // The whole cap is reserved: a tool call costing a cent no longer fits, and nothing was charged.
    const charge = await api.call(keys.agent, runId, {
      callId: 'c',
      name: 'charge_card',
      arguments: { amount: 1, currency: 'USD', customer: 'cus_1' },
    });
    expect(charge.body).toMatchObject({ status: 'budget_exhausted' });
    expect(await stack.sandbox.ledger()).toEqual([]);
  });

  it('charges a reservation in full when its lease runs out; a late settlement answers 409', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reserved = await reserve(runId, { requestId: 'late', model: 'acme/tiny', inputTokens: 1000, maxOutputTokens: 1000 });
    stack.deps!.now = () => realNow() + 31_000;
    const late = await settle(runId, reserved.body.modelCallId, { inputTokens: 1, outputTokens: 1 });
    expect([late.status, late.body.error.code]).toEqual([409, 'invalid_state']);
    expect(late.body.error.message).toContain('lease');
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.usage).toMatchObject({
      spendCents: 4,
      modelSpendCents: 4,
    });
    expect((await modelEvents(runId)).at(-1)).toEqual({
      type: 'model_call.expired',
      modelCallId: reserved.body.modelCallId,
      model: 'acme/tiny',
      chargedCents: 4,
    });
  });
});
