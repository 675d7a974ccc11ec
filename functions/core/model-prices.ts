import { calcPrice } from '@pydantic/genai-prices';
import { MICROS_PER_CENT } from './spend';

/** A price set by config (`modelPrices`), per million tokens, in cents. Cached input tokens are part of input tokens. */
export interface ModelPriceOverride {
  inputPerMillionCents: number;
  outputPerMillionCents: number;
  cachedInputPerMillionCents?: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
}

/** How a model is priced: its canonical id (`<provider>/<model>`), what a usage costs, and its context window if known. */
export interface ModelPricing {
  canonicalId: string;
  contextWindow?: number;
  microsOf(usage: TokenUsage): number;
}

export type PricingResult = { ok: true; pricing: ModelPricing } | { ok: false; message: string };

/** USD to micro-cents: 1 USD is 100 cents. Rounded up: spend is never under-counted by float noise beyond a micro-cent. */
const microsOfUsd = (usd: number) => Math.ceil(Math.round(usd * 100 * MICROS_PER_CENT * 1000) / 1000);

/**
 * The price of `model` (`<provider>/<model>`) now: config's `modelPrices` first, then the prices bundled with
 * `@pydantic/genai-prices` (never updated over the network: a price is what this release shipped).
 */
export function modelPricing(model: string, overrides: Record<string, ModelPriceOverride> | undefined, now: number): PricingResult {
  const slash = model.indexOf('/');
  if (slash <= 0 || slash === model.length - 1) return { ok: false, message: `model "${model}" is not "<provider>/<model>"` };
  const providerId = model.slice(0, slash);
  const modelId = model.slice(slash + 1);
  const known = calcPrice({ input_tokens: 0, output_tokens: 0 }, modelId, { providerId, timestamp: new Date(now) });
  const override = overrides?.[model];
  if (override) {
    const per = (tokens: number, perMillionCents: number) => Math.ceil(tokens * perMillionCents);
    return {
      ok: true,
      pricing: {
        canonicalId: model,
        ...(known?.model.context_window ? { contextWindow: known.model.context_window } : {}),
        microsOf: ({ inputTokens, outputTokens, cachedInputTokens = 0 }) => {
          const cached = Math.min(cachedInputTokens, inputTokens);
          return (
            per(inputTokens - cached, override.inputPerMillionCents) +
            per(cached, override.cachedInputPerMillionCents ?? override.inputPerMillionCents) +
            per(outputTokens, override.outputPerMillionCents)
          );
        },
      },
    };
  }
  if (!known)
    return {
      ok: false,
      message: `no price is known for model "${model}"; set one in config modelPrices ("${model}": { inputPerMillionCents, outputPerMillionCents })`,
    };
  const canonicalId = `${known.provider.id}/${known.model.id}`;
  return {
    ok: true,
    pricing: {
      canonicalId,
      ...(known.model.context_window ? { contextWindow: known.model.context_window } : {}),
      microsOf: ({ inputTokens, outputTokens, cachedInputTokens = 0 }) => {
        const priced = calcPrice(
          { input_tokens: inputTokens, output_tokens: outputTokens, cache_read_tokens: Math.min(cachedInputTokens, inputTokens) },
          modelId,
          { providerId, timestamp: new Date(now) },
        );
        return priced ? microsOfUsd(priced.total_price) : 0;
      },
    },
  };
}
