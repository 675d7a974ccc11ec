import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reserveModelCall, settleModelCall } from '../../functions/commands/model-calls';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import type { Principal } from '../../functions/core/model';
import type { Deps } from '../../functions/core/ports';
import { heldMicrosOf, microsOfCents, spentMicrosOf } from '../../functions/core/spend';
import { counterKeyOf, periodsAt } from '../../functions/core/spend-limits';
import { expireModelCallIfDue } from '../../functions/steps/model-call-expiry';
import type { ToolSpec } from '../../functions/core/tool-spec';
import { coreDeps, memoryStore } from '../support/memory-store';

/**
 * A model-based test of the one spend budget: random interleavings of model-call reservations, settlements,
 * lease expiries and tool calls across runs of one principal, over the in-memory store, each outcome checked
 * against a model of the budget: a reservation is never above the cap, and the cap never refuses what fits.
 * Seeded and replayable: SPEND_SEED and SPEND_RUNS in the environment.
 */
const SEED = Number(process.env.SPEND_SEED ?? 20261207);
const RUNS = Number(process.env.SPEND_RUNS ?? 2000);
const LEASE_SECONDS = 60;
// 7 and 13 micro-cents a token: prices in fractions of a cent, as model prices are.
const PRICE = { inputPerMillionCents: 7, outputPerMillionCents: 13 };

type Action =
  | { kind: 'reserve'; run: number; inputTokens: number; maxOutputTokens: number }
  | { kind: 'settle'; pick: number; inputShare: number; outputShare: number }
  | { kind: 'expire' }
  | { kind: 'tool'; run: number; costCents: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      run: fc.nat(2),
      inputTokens: fc.nat(400_000),
      maxOutputTokens: fc.integer({ min: 1, max: 400_000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      inputShare: fc.double({ min: 0, max: 1, noNaN: true }),
      outputShare: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tool' as const), run: fc.nat(2), costCents: fc.nat(4) }) },
);

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

interface ModelRun {
  cap: number;
  open: boolean;
  /** Micro-cents: tool spend, charged model spend, open reservations. */
  spent: number;
  reserved: Map<string, { micros: number; input: number; output: number; leaseUntil: number }>;
}

describe('one spend budget over model and tool calls', () => {
  it(`never reserves above a cap and never refuses what fits, over ${RUNS} schedules (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 3, maxLength: 3 }),
        fc.array(action, { maxLength: 40 }),
        async (caps, actions) => {
          let clock = Date.parse('2026-12-07T10:00:00Z');
          const store = memoryStore(() => clock);
          const base = coreDeps(store, [spendTool as ToolSpec], () => clock);
          const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
          const deps: Deps = {
            ...base,
            config: async () => ({ ...(await base.config()), modelPrices: { 'acme/m': PRICE }, modelCallLeaseSeconds: LEASE_SECONDS }),
          };
          const runs = await Promise.all(
            caps.map((cap) =>
              createRun(deps, agent, { maxSpendCents: cap, maxToolCalls: 1000, maxTurns: 1000, maxWallClockSeconds: 30 * 86400 }),
            ),
          );
          const model: ModelRun[] = caps.map((cap) => ({ cap: microsOfCents(cap), open: true, spent: 0, reserved: new Map() }));
          const held = (m: ModelRun) => m.spent + [...m.reserved.values()].reduce((sum, r) => sum + r.micros, 0);
          let calls = 0;
          for (const a of actions) {
            if (a.kind === 'reserve') {
              const m = model[a.run]!;
              const run = (await store.getRun(runs[a.run]!.runId))!;
              const micros = 7 * a.inputTokens + 13 * a.maxOutputTokens;
              const fits = m.open && held(m) + micros <= m.cap;
              const out = await reserveModelCall(deps, run, {
                requestId: `r${calls++}`,
                model: 'acme/m',
                inputTokens: a.inputTokens,
                maxOutputTokens: a.maxOutputTokens,
              });
              if (fits) {
                expect(out).toMatchObject({ kind: 'reserved', reservedCents: Math.round(micros / 100) / 10_000 });
                if (out.kind === 'reserved')
                  m.reserved.set(out.modelCallId, {
                    micros,
                    input: a.inputTokens,
                    output: a.maxOutputTokens,
                    leaseUntil: clock + LEASE_SECONDS * 1000,
                  });
              } else expect(out).toMatchObject({ kind: 'refused', refusal: { code: 'budget_exhausted' } });
            } else if (a.kind === 'settle') {
              const open = model.flatMap((m, i) => [...m.reserved.entries()].map(([id, r]) => ({ m, i, id, r })));
              if (!open.length) continue;
              const { m, i, id, r } = open[a.pick % open.length]!;
              const usage = { inputTokens: Math.floor(r.input * a.inputShare), outputTokens: Math.floor(r.output * a.outputShare) };
              const out = await settleModelCall(deps, runs[i]!, id, usage);
              m.reserved.delete(id);
              if (clock >= r.leaseUntil) {
                // Past its lease: charged in full, and the settlement refused.
                expect(out).toMatchObject({ kind: 'invalid_state' });
                m.spent += r.micros;
              } else {
                const charged = 7 * usage.inputTokens + 13 * usage.outputTokens;
                expect(out).toMatchObject({ kind: 'settled', view: { chargedCents: Math.round(charged / 100) / 10_000 } });
                m.spent += charged;
              }
            } else if (a.kind === 'expire') {
              clock += (LEASE_SECONDS + 1) * 1000;
            } else {
              const m = model[a.run]!;
              const run = (await store.getRun(runs[a.run]!.runId))!;
              const fits = m.open && held(m) + microsOfCents(a.costCents) <= m.cap;
              const out = await submitToolCall(
                deps,
                run,
                agent,
                { callId: `c${calls++}`, turn: 1, name: 'spend', arguments: { cents: a.costCents } },
                { waitSeconds: 0 },
              );
              expect(out.kind).toBe('created');
              const exhausted = out.kind === 'created' && out.op.outcome?.kind === 'budget_exhausted';
              if (fits) {
                expect(exhausted).toBe(false);
                m.spent += microsOfCents(a.costCents);
              } else {
                // A tool call over the budget exhausts the run: later calls and reservations are refused too.
                expect(exhausted).toBe(true);
                m.open = false;
              }
            }
            // Every run holds what the model says, never above its cap; reservations are held, not spent.
            for (const [i, m] of model.entries()) {
              const stored = (await store.getRun(runs[i]!.runId))!;
              expect(heldMicrosOf(stored.usage)).toBe(held(m));
              expect(heldMicrosOf(stored.usage)).toBeLessThanOrEqual(m.cap);
              expect(spentMicrosOf(stored.usage)).toBe(m.spent);
            }
          }
        },
      ),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
  }, 120_000);
});

type LimitAction = Action | { kind: 'sweep' };

describe('one spend limit per principal and UTC day across runs', () => {
  it(`never holds a counter above its cap and never refuses what fits, over ${Math.ceil(RUNS / 4)} schedules (seed ${SEED})`, async () => {
    const actions: fc.Arbitrary<LimitAction> = fc.oneof(
      { weight: 9, arbitrary: action },
      { weight: 1, arbitrary: fc.constant({ kind: 'sweep' as const }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 12 }), fc.array(actions, { maxLength: 40 }), async (dayCap, list) => {
        // Ten minutes before midnight: leases that run out carry schedules into the next UTC day.
        let clock = Date.parse('2026-12-07T23:50:00Z');
        const store = memoryStore(() => clock);
        const base = coreDeps(store, [spendTool as ToolSpec], () => clock);
        const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
        const deps: Deps = {
          ...base,
          config: async () => ({
            ...(await base.config()),
            modelPrices: { 'acme/m': PRICE },
            modelCallLeaseSeconds: LEASE_SECONDS,
            spendLimits: [{ principal: 'agent', perDayCents: dayCap }],
          }),
        };
        const budgets = { maxSpendCents: 1000, maxToolCalls: 1000, maxTurns: 1000, maxWallClockSeconds: 30 * 86400 };
        const runs = [await createRun(deps, agent, budgets), await createRun(deps, agent, budgets)];
        const cap = microsOfCents(dayCap);
        // The model: each UTC day's counter, and each open reservation with the day it was made in.
        const days = new Map<string, number>();
        const reserved = new Map<string, { run: number; micros: number; day: string; input: number; output: number; leaseUntil: number }>();
        const today = () => periodsAt(clock).day.key;
        const counter = (day: string) => days.get(day) ?? 0;
        const charge = (day: string, micros: number) => days.set(day, counter(day) + micros);
        let calls = 0;
        for (const a of list) {
          if (a.kind === 'reserve') {
            const run = (await store.getRun(runs[a.run % 2]!.runId))!;
            const micros = 7 * a.inputTokens + 13 * a.maxOutputTokens;
            const fits = counter(today()) + micros <= cap;
            const out = await reserveModelCall(deps, run, {
              requestId: `r${calls++}`,
              model: 'acme/m',
              inputTokens: a.inputTokens,
              maxOutputTokens: a.maxOutputTokens,
            });
            if (!fits) expect(out).toMatchObject({ kind: 'refused', refusal: { code: 'spend_limit' } });
            else {
              expect(out).toMatchObject({ kind: 'reserved' });
              if (out.kind === 'reserved') {
                reserved.set(out.modelCallId, {
                  run: a.run % 2,
                  micros,
                  day: today(),
                  input: a.inputTokens,
                  output: a.maxOutputTokens,
                  leaseUntil: clock + LEASE_SECONDS * 1000,
                });
                charge(today(), micros);
              }
            }
          } else if (a.kind === 'settle') {
            const open = [...reserved.entries()];
            if (!open.length) continue;
            const [id, r] = open[a.pick % open.length]!;
            const usage = { inputTokens: Math.floor(r.input * a.inputShare), outputTokens: Math.floor(r.output * a.outputShare) };
            const out = await settleModelCall(deps, runs[r.run]!, id, usage);
            reserved.delete(id);
            // Past its lease the reservation stays charged in full; settled, the counter of its day gives back the rest.
            if (clock < r.leaseUntil) {
              expect(out).toMatchObject({ kind: 'settled' });
              charge(r.day, 7 * usage.inputTokens + 13 * usage.outputTokens - r.micros);
            } else expect(out).toMatchObject({ kind: 'invalid_state' });
          } else if (a.kind === 'expire') {
            clock += (LEASE_SECONDS + 1) * 1000;
          } else if (a.kind === 'sweep') {
            for (const [id, r] of reserved)
              if (clock >= r.leaseUntil) {
                await expireModelCallIfDue(deps, id, new Date(clock).toISOString());
                reserved.delete(id);
              }
          } else {
            const run = (await store.getRun(runs[a.run % 2]!.runId))!;
            const micros = microsOfCents(a.costCents);
            const fits = micros === 0 || counter(today()) + micros <= cap;
            const out = await submitToolCall(
              deps,
              run,
              agent,
              { callId: `c${calls++}`, turn: 1, name: 'spend', arguments: { cents: a.costCents } },
              { waitSeconds: 0 },
            );
            expect(out.kind).toBe('created');
            const outcome = out.kind === 'created' ? out.op.outcome : undefined;
            if (fits) {
              expect(outcome).toBeUndefined();
              charge(today(), micros);
            } else expect(outcome).toMatchObject({ kind: 'budget_exhausted', code: 'spend_limit' });
          }
          // Every day's counter holds what the model says, never above the cap; both runs stay open.
          for (const [day, micros] of days) {
            expect(store.spendCounters.get(counterKeyOf({ principalId: 'agent', period: 'day', periodKey: day })) ?? 0).toBe(micros);
            expect(micros).toBeLessThanOrEqual(cap);
          }
          for (const run of runs) expect((await store.getRun(run.runId))!.status).toBe('open');
        }
      }),
      { numRuns: Math.ceil(RUNS / 4), seed: SEED, endOnFailure: true },
    );
  }, 120_000);
});
