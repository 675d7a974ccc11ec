import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationIdFor } from '../../functions/core/ids';
import { withinOneMinute } from '../support/one-minute';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce } from '../support/target';

/**
 * Rate limits (config `rateLimits`) through the HTTP API, the typed client and MCP: a call over a limit
 * creates nothing and uses no budget. Across two processes: rate-limits-processes.test.ts.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
  if (configEditsApplyAtOnce) {
    stack.editConfig((c) => {
      c.rateLimits = [
        { tool: 'get_order', principal: '*', perMinute: 2 },
        // Per principal: a call waiting for a person holds a slot only of a limit that is not shared by everyone.
        { tool: 'charge_card', principal: '*', concurrent: 1 },
      ];
    });
  }
}, 240_000);
afterAll(async () => {
  await stack?.stop();
});

// The config is edited at the start: where functions cache the config secret (template mode, AWS) it would apply late.
describe.runIf(configEditsApplyAtOnce)('rate limits', () => {
  it('perMinute: over the limit answers 429 throttled with Retry-After, creates nothing, uses no budget; a replay is never throttled', async () => {
    const { keys, api } = stack;
    const agent = api.client(keys.agent);
    const seen = await withinOneMinute(async (attempt) => {
      const runId = await api.createRun(keys.agent);
      const callId = (i: number) => `rl_${attempt}_${i}`;
      const call = (i: number) => api.call(keys.agent, runId, { callId: callId(i), name: 'get_order', arguments: { orderId: 'ord_1' } }, 5);
      const admitted = [await call(1), await call(2)];
      const usage = (await agent.getRun(runId)).usage;
      const throttled = await call(3);
      const replay = await call(1);
      const refused = await agent.submitToolCall(runId, { callId: callId(4), turn: 1, name: 'get_order', arguments: { orderId: 'ord_1' } });
      return {
        runId,
        callId,
        admitted,
        usage,
        throttled,
        replay,
        refused,
        usageAfter: (await agent.getRun(runId)).usage,
        created: await agent.findToolCall(runId, callId(3)),
        traced: (await api.trace(keys.agent, runId)).filter((e) => e.callId === callId(3) || e.callId === callId(4)),
      };
    });
    // Admitted: the envelope, or pending where a loaded machine's upstream answered after the wait.
    for (const r of seen.admitted) expect([200, 202]).toContain(r.status);
    expect(seen.throttled.status).toBe(429);
    expect(seen.throttled.body.error).toEqual({ code: 'throttled', message: expect.stringContaining('at most 2 calls a minute') });
    const retryAfter = Number(seen.throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Nothing was created, nothing traced and no budget used.
    expect(seen.created).toBeUndefined();
    expect(seen.traced).toEqual([]);
    expect(seen.usageAfter).toEqual(seen.usage);
    // A replay of an admitted call is answered as before, not throttled.
    expect([200, 202]).toContain(seen.replay.status);
    expect(seen.replay.headers.get('idempotent-replayed')).toBe('true');
    expect(seen.replay.body.logical_operation_id ?? seen.replay.body.operationId).toBe(operationIdFor(seen.runId, seen.callId(1)));
    // The typed client hands the 429 back as a refusal carrying Retry-After.
    expect(seen.refused).toMatchObject({ kind: 'refused', status: 429, code: 'throttled', retryAfterSeconds: expect.any(Number) });

    // principal "*": each principal counts on its own.
    const otherRun = await api.createRun(keys.other);
    const other = await api.call(keys.other, otherRun, { callId: 'rl_other', name: 'get_order', arguments: { orderId: 'ord_1' } }, 5);
    expect([200, 202]).toContain(other.status);
  });

  it('concurrent per principal: a slot is held while the call is in flight and freed when it settles; MCP answers isError with when to retry', async () => {
    const { keys, api } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 100_000_000 });
    const charge = (callId: string) =>
      api.call(
        keys.agent,
        runId,
        { callId, name: 'charge_card', arguments: { amount: 60_000, currency: 'EUR', customer: `cus_${callId}` } },
        5,
      );
    const held = await charge('rl_c1');
    expect(held.status).toBe(202);
    expect(held.body.state).toBe('awaiting_approval');

    const refused = await charge('rl_c2');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error.message).toContain('at most 1 call in flight');

    const client = new Client({ name: 'toolrunner-rate-limits-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${keys.agent}` } },
      }),
    );
    try {
      const viaMcp = await client.callTool({ name: 'charge_card', arguments: { amount: 100, currency: 'EUR', customer: 'cus_mcp' } });
      expect(viaMcp.isError).toBe(true);
      const text = (viaMcp.content as { type: string; text: string }[])[0].text;
      expect(JSON.parse(text).error).toMatchObject({
        code: 'throttled',
        retryAfterSeconds: 1,
        message: expect.stringContaining('retry in 1 s'),
      });
    } finally {
      await client.close();
    }

    // Rejected: the first call settles, which frees its slot at once.
    const decided = await api.request('POST', `/v1/operations/${held.body.operationId}/approval`, {
      key: keys.approver,
      body: { decision: 'reject' },
    });
    expect(decided.status).toBe(200);
    const next = await charge('rl_c3');
    expect(next.status).toBe(202);
    expect(next.body.state).toBe('awaiting_approval');
  });

  it("concurrent for everyone: a call waiting for a person holds no slot, so another principal's read runs; running calls still take it", async () => {
    const { keys, api, sandbox } = stack;
    const before = (await stack.deps!.config()).rateLimits;
    stack.editConfig((c) => {
      c.rateLimits = [{ concurrent: 1 }];
    });
    try {
      await api.until(
        'the shared limit to apply',
        async () => (await stack.deps!.config()).rateLimits,
        (limits) => limits?.length === 1 && limits[0].concurrent === 1,
      );
      const runId = await api.createRun(keys.agent, { maxSpendCents: 100_000_000 });
      const waiting = await api.call(
        keys.agent,
        runId,
        { callId: 'rl_g_wait', name: 'charge_card', arguments: { amount: 60_000, currency: 'EUR', customer: 'cus_rl_g' } },
        5,
      );
      expect(waiting.status).toBe(202);
      expect(waiting.body.state).toBe('awaiting_approval');

      const otherRun = await api.createRun(keys.other);
      const read = (callId: string, waitSeconds: number) =>
        api.call(keys.other, otherRun, { callId, name: 'get_order', arguments: { orderId: 'ord_1' } }, waitSeconds);
      const ran = await read('rl_g_read', 10);
      expect(ran.status).toBe(200);
      expect(ran.body.status).toBe('succeeded');

      // A call that runs now still takes the one slot: while it is in flight, the next call is throttled.
      await sandbox.fault({ route: 'GET /v1/orders/ord_1', mode: 'hang', delayMs: 3_000 });
      const inFlight = await read('rl_g_slow', 0);
      expect(inFlight.status).toBe(202);
      const throttled = await read('rl_g_next', 0);
      expect(throttled.status).toBe(429);
      expect(throttled.body.error.message).toContain('at most 1 call in flight');
      await api.until(
        'the slow read to settle',
        () => api.operation(keys.other, inFlight.body.operationId),
        (op) => op.state === 'reported',
        60_000,
      );

      const rejected = await api.request('POST', `/v1/operations/${waiting.body.operationId}/approval`, {
        key: keys.approver,
        body: { decision: 'reject' },
      });
      expect(rejected.status).toBe(200);
    } finally {
      stack.editConfig((c) => {
        c.rateLimits = before;
      });
    }
  }, 120_000);
});
