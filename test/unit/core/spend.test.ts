import { describe, expect, it } from 'vitest';
import { RateLimitSchema, RunnerConfigSchema } from '../../../functions/core/config';
import { modelRateTakes, rateTakes } from '../../../functions/core/rate-limits';
import { centsOfMicros, heldMicrosOf, microsOfCents, spendView, wholeCentsOfMicros } from '../../../functions/core/spend';

const now = Date.parse('2026-12-07T10:00:00Z');

describe('spend in micro-cents', () => {
  it('converts whole cents exactly and reports cents with 4 decimal places', () => {
    expect(microsOfCents(1200)).toBe(1_200_000_000);
    expect(centsOfMicros(1_200_000_000)).toBe(1200);
    expect(centsOfMicros(125_000)).toBe(0.125);
    expect(centsOfMicros(123_456)).toBe(0.1235);
    expect(centsOfMicros(1)).toBe(0);
    expect(wholeCentsOfMicros(1)).toBe(1);
    expect(wholeCentsOfMicros(2_000_000)).toBe(2);
  });

  it('splits usage into model and tool spend; open reservations are held, not spent', () => {
    const usage = {
      turns: 1,
      toolCalls: 1,
      spendCents: 600,
      modelSpendMicros: 1_250_000,
      reservedMicros: 5_000_000,
      heldMicros: 606_250_000,
    };
    expect(spendView(usage)).toEqual({ spendCents: 601.25, modelSpendCents: 1.25, toolSpendCents: 600 });
    expect(heldMicrosOf(usage)).toBe(606_250_000);
    // A run that never reserved holds its tool spend.
    expect(heldMicrosOf({ turns: 0, toolCalls: 1, spendCents: 600 })).toBe(600_000_000);
  });
});

describe('rate limits on model calls', () => {
  it('count model calls only against entries naming a model, and tool calls never against them', () => {
    const limits = [RateLimitSchema.parse({ model: '*', perMinute: 5 }), RateLimitSchema.parse({ principal: '*', perMinute: 9 })];
    expect(modelRateTakes(limits, { model: 'acme/tiny', principal: 'a' }, now)).toEqual([
      expect.objectContaining({ limit: 5, scope: 'model.each=acme%2Ftiny|principal.all' }),
    ]);
    expect(rateTakes(limits, { tool: 't', principal: 'a' }, now)).toEqual([expect.objectContaining({ limit: 9 })]);
  });

  it('refuses at load an entry naming a tool and a model, or a model with concurrent', () => {
    expect(RateLimitSchema.safeParse({ model: 'a/b', tool: 't', perMinute: 1 }).success).toBe(false);
    expect(RateLimitSchema.safeParse({ model: 'a/b', concurrent: 1 }).success).toBe(false);
    expect(
      RunnerConfigSchema.safeParse({ principals: [], modelPrices: { nope: { inputPerMillionCents: 1, outputPerMillionCents: 1 } } })
        .success,
    ).toBe(false);
    expect(RunnerConfigSchema.safeParse({ principals: [], modelCallLeaseSeconds: 10 }).success).toBe(false);
  });
});
