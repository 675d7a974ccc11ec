import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reserveModelCall, settleModelCall } from '../../../functions/commands/model-calls';
import { createRun, submitToolCall } from '../../../functions/commands/submit';
import { RunnerConfigSchema } from '../../../functions/core/config';
import { envelopeFor } from '../../../functions/core/envelope';
import type { Principal } from '../../../functions/core/model';
import type { Deps } from '../../../functions/core/ports';
import { counterKeyOf, periodsAt } from '../../../functions/core/spend-limits';
import type { ToolSpec } from '../../../functions/core/tool-spec';
import { expireModelCallIfDue } from '../../../functions/steps/model-call-expiry';
import { coreDeps, memoryStore } from '../../support/memory-store';

const spendTool: ToolSpec<{ cents: number }, object> = {
  name: 'spend',
  description: 'costs what it is told',
  inputSchema: z.strictObject({ cents: z.number().int().min(0) }),
  outputSchema: z.object({}),
  risk: 'read',
  timeoutMs: 1000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  costCents: (input) => input.cents,
  execute: async () => ({}),
};

const principals = [
  { id: 'agent', key: 'k'.repeat(16), roles: ['agent' as const], tools: '*' as const },
  { id: 'other', key: 'o'.repeat(16), roles: ['agent' as const], tools: '*' as const },
];

function setup(spendLimits: unknown[], start = '2026-12-07T23:00:00Z') {
  let clock = Date.parse(start);
  const store = memoryStore(() => clock);
  const base = coreDeps(store, [spendTool as ToolSpec], () => clock);
  const config = RunnerConfigSchema.parse({
    principals,
    approvalSecret: 's'.repeat(32),
    modelPrices: { 'acme/m': { inputPerMillionCents: 1_000_000, outputPerMillionCents: 1_000_000 } },
    modelCallLeaseSeconds: 60,
    spendLimits,
  });
  const deps = { ...base, config: async () => config } as Deps;
  const run = (p: Principal) =>
    createRun(deps, p, { maxSpendCents: 10_000, maxToolCalls: 1000, maxTurns: 1000, maxWallClockSeconds: 86_400 });
  const call = async (runId: string, p: Principal, callId: string, cents: number) => {
    const out = await submitToolCall(deps, (await store.getRun(runId))!, p, { callId, turn: 1, name: 'spend', arguments: { cents } });
    if (out.kind !== 'created') throw new Error(out.kind);
    // An admitted call waits for its execution (the lifecycle is idle here); a refused one has its envelope already.
    return out.op.outcome ? envelopeFor(out.op, out.op.outcome) : { status: 'admitted' as const };
  };
  return { store, deps, run, call, tick: (ms: number) => (clock += ms), now: () => clock };
}

const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const other: Principal = { id: 'other', roles: ['agent'], tools: '*' };

describe('config spendLimits', () => {
  const parse = (spendLimits: unknown) => RunnerConfigSchema.safeParse({ principals, spendLimits });

  it('takes one entry per principal and "*", each with a day or month cap', () => {
    expect(
      parse([
        { principal: '*', perDayCents: 500 },
        { principal: 'agent', perMonthCents: 9000, perDayCents: 100 },
      ]).success,
    ).toBe(true);
  });

  it('refuses a second entry for one scope, an unknown principal, an entry with no cap and unknown keys', () => {
    const messages = (input: unknown) => {
      const out = parse(input);
      return out.success ? [] : out.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    expect(
      messages([
        { principal: '*', perDayCents: 5 },
        { principal: '*', perMonthCents: 50 },
      ]),
    ).toEqual(['spendLimits.1: another spend limit names "*": put perDayCents and perMonthCents in one entry']);
    expect(messages([{ principal: 'nobody', perDayCents: 5 }])).toEqual([
      'spendLimits.0: there is no principal "nobody" (a spend limit names a principal or "*")',
    ]);
    expect(messages([{ principal: 'agent' }])).toEqual(['spendLimits.0: a spend limit needs perDayCents, perMonthCents or both']);
    expect(messages([{ principal: 'agent', perDayCents: 5, perWeekCents: 1 }])[0]).toMatch(/perWeekCents/);
  });
});

describe('spend limits per principal across runs', () => {
  it('refuses the tool call that would pass the per-day cap across two runs, naming the limit and its reset', async () => {
    const t = setup([{ principal: 'agent', perDayCents: 10 }]);
    const [a, b] = [await t.run(agent), await t.run(agent)];
    expect((await t.call(a.runId, agent, 'c1', 6)).status).toBe('admitted');
    expect((await t.call(b.runId, agent, 'c2', 4)).status).toBe('admitted');
    const refused = await t.call(b.runId, agent, 'c3', 1);
    expect(refused).toMatchObject({
      status: 'budget_exhausted',
      code: 'spend_limit',
      message:
        'the spend limit of principal "agent" is 10 cents per day (spendLimits): this call could cost 1 cents and 0 are left; it resets at 2026-12-08T00:00:00.000Z',
      allowed_next_actions: ['stop'],
    });
    // The run stays open and counted nothing; a call that costs nothing still fits.
    expect((await t.store.getRun(b.runId))!).toMatchObject({ status: 'open', usage: { toolCalls: 1, spendCents: 4 } });
    expect((await t.call(b.runId, agent, 'c4', 0)).status).toBe('admitted');
    const day = periodsAt(t.now()).day.key;
    expect(t.store.spendCounters.get(counterKeyOf({ principalId: 'agent', period: 'day', periodKey: day }))).toBe(10_000_000);
    // A new UTC day starts a new counter.
    t.tick(3600_000);
    expect((await t.call(b.runId, agent, 'c5', 10)).status).toBe('admitted');
  });

  it('counts each principal on its own under "*", and a named entry decides over "*"', async () => {
    const t = setup([
      { principal: '*', perDayCents: 5 },
      { principal: 'other', perMonthCents: 8 },
    ]);
    const [a, o] = [await t.run(agent), await t.run(other)];
    expect((await t.call(a.runId, agent, 'a1', 5)).status).toBe('admitted');
    expect((await t.call(o.runId, other, 'o1', 7)).status).toBe('admitted');
    expect(await t.call(a.runId, agent, 'a2', 1)).toMatchObject({
      code: 'spend_limit',
      message: expect.stringContaining('5 cents per day'),
    });
    expect(await t.call(o.runId, other, 'o2', 2)).toMatchObject({
      code: 'spend_limit',
      message: expect.stringContaining(
        '"other" is 8 cents per month (spendLimits): this call could cost 2 cents and 1 are left; it resets at 2027-01-01T00:00:00.000Z',
      ),
    });
  });

  it('holds model reservations against the counter, refuses spend_limit, and moves it by settlements and expiries', async () => {
    const t = setup([{ principal: 'agent', perDayCents: 10 }]);
    const [a, b] = [await t.run(agent), await t.run(agent)];
    const key = counterKeyOf({ principalId: 'agent', period: 'day', periodKey: periodsAt(t.now()).day.key });
    const held = () => t.store.spendCounters.get(key);
    // A cent per token: 3 input and 3 output tokens reserve 6 cents.
    const r1 = await reserveModelCall(t.deps, a, { requestId: 'r1', model: 'acme/m', inputTokens: 3, maxOutputTokens: 3 });
    expect(r1).toMatchObject({ kind: 'reserved', reservedCents: 6 });
    expect(held()).toBe(6_000_000);
    expect(await reserveModelCall(t.deps, b, { requestId: 'r2', model: 'acme/m', inputTokens: 2, maxOutputTokens: 3 })).toEqual({
      kind: 'refused',
      refusal: {
        status: 'refused',
        code: 'spend_limit',
        message:
          'the spend limit of principal "agent" is 10 cents per day (spendLimits): this call could cost 5 cents and 4 are left; it resets at 2026-12-08T00:00:00.000Z',
      },
    });
    expect((await t.store.getRun(b.runId))!.usage.heldMicros).toBeUndefined();
    if (r1.kind !== 'reserved') throw new Error('not reserved');
    await settleModelCall(t.deps, a, r1.modelCallId, { inputTokens: 3, outputTokens: 1 });
    expect(held()).toBe(4_000_000);
    const r3 = await reserveModelCall(t.deps, b, { requestId: 'r3', model: 'acme/m', inputTokens: 2, maxOutputTokens: 3 });
    expect(r3).toMatchObject({ kind: 'reserved', reservedCents: 5 });
    if (r3.kind !== 'reserved') throw new Error('not reserved');
    t.tick(61_000);
    await expireModelCallIfDue(t.deps, r3.modelCallId, new Date(t.now()).toISOString());
    // Charged in full on the run and on the counter of the day it was reserved in.
    expect(held()).toBe(9_000_000);
    expect(await t.call(a.runId, agent, 'c1', 2)).toMatchObject({ code: 'spend_limit' });
  });

  it('changes nothing without spendLimits: no counter is read or written', async () => {
    const t = setup([]);
    const a = await t.run(agent);
    const reads: unknown[] = [];
    const getSpendCounters = t.store.getSpendCounters;
    t.store.getSpendCounters = async (refs) => {
      reads.push(refs);
      return getSpendCounters(refs);
    };
    expect((await t.call(a.runId, agent, 'c1', 6)).status).toBe('admitted');
    expect(await reserveModelCall(t.deps, a, { requestId: 'r1', model: 'acme/m', inputTokens: 3, maxOutputTokens: 3 })).toMatchObject({
      kind: 'reserved',
    });
    expect(reads).toEqual([]);
    expect(t.store.spendCounters.size).toBe(0);
  });
});
