import { describe, expect, it } from 'vitest';
import { decideReservation, decideSettlement, modelCallIdFor } from '../../../functions/core/model-calls';
import { modelPricing } from '../../../functions/core/model-prices';
import type { RunRecord } from '../../../functions/core/model';

const now = Date.parse('2026-12-07T10:00:00Z');
const priced = modelPricing('acme/tiny', { 'acme/tiny': { inputPerMillionCents: 1_000_000, outputPerMillionCents: 2_000_000 } }, now);
if (!priced.ok) throw new Error(priced.message);
const pricing = priced.pricing;

function run(maxSpendCents: number, spendCents = 0): RunRecord {
  return {
    runId: 'run_1',
    principalId: 'agent',
    status: 'open',
    createdAt: new Date(now).toISOString(),
    deadline: new Date(now + 3_600_000).toISOString(),
    budgets: { maxTurns: 5, maxToolCalls: 5, maxSpendCents, maxWallClockSeconds: 3600 },
    usage: { turns: 0, toolCalls: 0, spendCents },
  } as unknown as RunRecord;
}

describe('model calls', () => {
  it('derives one id per (run, requestId)', () => {
    expect(modelCallIdFor('run_1', 'r1')).toBe(modelCallIdFor('run_1', 'r1'));
    expect(modelCallIdFor('run_1', 'r1')).not.toBe(modelCallIdFor('run_1', 'r2'));
    expect(modelCallIdFor('run_1', 'r1')).not.toBe(modelCallIdFor('run_2', 'r1'));
  });

  it('reserves input plus the most output at the price now, and refuses what does not fit, reserving nothing', () => {
    // 2 input tokens at 1 cent each and 3 output tokens at 2 cents each: 8 cents.
    const request = { requestId: 'r1', model: 'acme/tiny', maxOutputTokens: 3, inputTokens: 2 };
    const fits = decideReservation({ run: run(8), request, pricing, now, leaseSeconds: 600 });
    expect(fits).toMatchObject({ kind: 'reserve', reservedMicros: 8_000_000, call: { state: 'reserved', model: 'acme/tiny' } });
    const over = decideReservation({ run: run(8, 1), request, pricing, now, leaseSeconds: 600 });
    expect(over).toMatchObject({ kind: 'refused', refusal: { status: 'refused', code: 'budget_exhausted' } });
  });

  it('settles at the price of what was used, replays the same usage, refuses other usage, and charges in full after the lease', () => {
    const request = { requestId: 'r1', model: 'acme/tiny', maxOutputTokens: 3, inputTokens: 2 };
    const reserved = decideReservation({ run: run(100), request, pricing, now, leaseSeconds: 600 });
    if (reserved.kind !== 'reserve') throw new Error(reserved.kind);
    const usage = { inputTokens: 2, outputTokens: 1 };
    const settled = decideSettlement(reserved.call, usage, pricing, now + 1000);
    expect(settled).toMatchObject({ kind: 'settle', after: { state: 'settled', chargedMicros: 4_000_000 } });
    if (settled.kind !== 'settle') throw new Error(settled.kind);
    expect(decideSettlement(settled.after, usage, pricing, now + 2000)).toEqual({ kind: 'replay' });
    expect(decideSettlement(settled.after, { inputTokens: 2, outputTokens: 2 }, pricing, now + 2000)).toMatchObject({
      kind: 'invalid_state',
    });
    const late = decideSettlement(reserved.call, usage, pricing, now + 601_000);
    expect(late).toMatchObject({ kind: 'expire', after: { state: 'expired', chargedMicros: 8_000_000 } });
  });

  it('traces an overrun when usage costs more than was reserved', () => {
    const request = { requestId: 'r1', model: 'acme/tiny', maxOutputTokens: 1, inputTokens: 1 };
    const reserved = decideReservation({ run: run(100), request, pricing, now, leaseSeconds: 600 });
    if (reserved.kind !== 'reserve') throw new Error(reserved.kind);
    const settled = decideSettlement(reserved.call, { inputTokens: 5, outputTokens: 5 }, pricing, now + 1000);
    if (settled.kind !== 'settle') throw new Error(settled.kind);
    expect(settled.events.map((e) => e.type)).toEqual(['model_call.settled', 'model_call.overrun']);
  });
});
