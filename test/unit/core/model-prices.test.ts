import { describe, expect, it } from 'vitest';
import { modelPricing } from '../../../functions/core/model-prices';

const now = Date.parse('2026-12-07T10:00:00Z');

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
