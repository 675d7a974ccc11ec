import { describe, expect, it } from 'vitest';
import { modelPricing } from '../../../functions/core/model-prices';
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

describe('model prices', () => {
  it('prices a known model from the bundled prices, under its canonical id', () => {
    const priced = modelPricing('openai/gpt-4o-2024-08-06', undefined, now);
    if (!priced.ok) throw new Error(priced.message);
    expect(priced.pricing.canonicalId).toBe('openai/gpt-4o');
    expect(priced.pricing.contextWindow).toBe(128_000);
    // $2.50 and $10 per million tokens: 1,000 in and 1,000 out is 1.25 cents.
    expect(priced.pricing.microsOf({ inputTokens: 1000, outputTokens: 1000 })).toBe(1_250_000);
    // Cached input tokens are part of the input tokens, at the cached price ($1.25).
    expect(priced.pricing.microsOf({ inputTokens: 1000, outputTokens: 0, cachedInputTokens: 1000 })).toBe(125_000);
  });

  it('takes config modelPrices first, exactly in micro-cents', () => {
    const priced = modelPricing(
      'acme/tiny',
      { 'acme/tiny': { inputPerMillionCents: 10, outputPerMillionCents: 40, cachedInputPerMillionCents: 1 } },
      now,
    );
    if (!priced.ok) throw new Error(priced.message);
    expect(priced.pricing.canonicalId).toBe('acme/tiny');
    expect(priced.pricing.contextWindow).toBeUndefined();
    expect(priced.pricing.microsOf({ inputTokens: 3, outputTokens: 2, cachedInputTokens: 1 })).toBe(2 * 10 + 1 + 2 * 40);
  });

  it('refuses a model with no price, naming modelPrices, and a model id without a provider', () => {
    const unknown = modelPricing('acme/tiny', undefined, now);
    expect(unknown).toMatchObject({ ok: false, message: expect.stringContaining('modelPrices') });
    expect(modelPricing('gpt-4o', undefined, now)).toMatchObject({ ok: false, message: expect.stringContaining('<provider>/<model>') });
  });
});
