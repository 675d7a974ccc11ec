import { randomUUID } from 'node:crypto';
import type { ModelCallReservation, ModelCallUsage, ToolRunnerClient } from '../client';

/**
 * What both adapters share to put model calls under the run's spend cap: reserve before the call (at the
 * runner, the price of the prompt's tokens plus the most the answer may hold), settle after it with the usage
 * the provider reported. The runner answers a reservation that does not fit with a refusal, which the
 * adapters turn into the assistant's text so the framework ends the turn as it ends any other.
 */

/** The two calls of the runner's client the adapters use: reserve before a model call, settle after it. */
export type ModelSpendClient = Pick<ToolRunnerClient, 'reserveModelCall' | 'settleModelCall'>;
export type { ModelCallReservation, ModelCallUsage };

/** How an adapter reserves a model call before it runs and settles it after (`wrapModel`, `modelProvider`). */
export interface ModelSpendOptions {
  /** `<provider>/<model>` as the runner prices it, when the one derived from the framework's model is not. */
  model?: string;
  /**
   * The output tokens reserved (and asked of the model) when a call sets no limit of its own; default 4096.
   * A call's own limit is reserved as it is.
   */
  maxOutputTokens?: number;
  /**
   * The input tokens reserved for a call's request (its serialized prompt and tools). By default the request's
   * UTF-8 size: byte-level tokenizers never make a token of less than a byte, so it does not fall short for text.
   */
  estimateInputTokens?: (request: unknown) => number;
}

export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/** A model call's reservation at the runner, settled exactly once. */
export interface ReservedModelCall {
  modelCallId: string;
  reservedCents: number;
  /** Settles at what the provider reported; without a report, at the full reservation. */
  settle(usage: ModelCallUsage | undefined): Promise<void>;
}

export type ModelCallAdmission = { kind: 'reserved'; call: ReservedModelCall } | { kind: 'refused'; code: string; message: string };

/** Reserves for one model call of `runId` and hands back its settlement. */
export async function reserveModelCall(
  client: ModelSpendClient,
  runId: string,
  call: { model: string; maxOutputTokens: number; inputTokens: number },
): Promise<ModelCallAdmission> {
  const answer = await client.reserveModelCall(runId, { requestId: randomUUID(), ...call });
  if (answer.status === 'refused') return { kind: 'refused', code: answer.code, message: answer.message };
  const { modelCallId, reservedCents } = answer;
  let settled: Promise<void> | undefined;
  const settle = (usage: ModelCallUsage | undefined) => {
    // Fail closed: a call whose usage never arrived is charged what was reserved for it.
    const used = usage ?? { inputTokens: call.inputTokens, outputTokens: call.maxOutputTokens };
    // A settlement that does not reach the runner leaves the reservation to its lease, which charges it in full:
    // the model's answer is not lost for it.
    settled ??= client.settleModelCall(runId, modelCallId, used).then(
      () => undefined,
      () => undefined,
    );
    return settled;
  };
  return { kind: 'reserved', call: { modelCallId, reservedCents, settle } };
}

/** A provider's HTTP error answer (nothing generated, nothing billed) rather than a failure after the request went out. */
export function isProviderRefusal(error: unknown): boolean {
  const e = error as { statusCode?: unknown; status?: unknown } | undefined;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : typeof e?.status === 'number' ? e.status : undefined;
  return status !== undefined && status >= 400 && status < 500;
}

export const NOTHING_USED: ModelCallUsage = { inputTokens: 0, outputTokens: 0 };

/** The request's size in UTF-8 bytes, binary parts by their length: an upper bound of its text tokens. */
export function requestBytes(request: unknown): number {
  let binary = 0;
  const json = JSON.stringify(request, (_key, value) => {
    if (value instanceof Uint8Array) {
      binary += value.byteLength;
      return null;
    }
    return value;
  });
  return Buffer.byteLength(json ?? '', 'utf8') + binary;
}

/**
 * The runner's (genai-prices') provider id for an AI SDK provider string (`openai.chat`, `anthropic.messages`,
 * `google.vertex.chat`, `amazon-bedrock`, ...): its first segment, renamed where the two differ.
 */
const PROVIDER_IDS: Record<string, string> = {
  'amazon-bedrock': 'aws',
  bedrock: 'aws',
  xai: 'x-ai',
  togetherai: 'together',
  'google-vertex': 'google',
  vertex: 'google',
};

/** `<provider>/<model>` for an AI SDK model: the gateway's ids already are, others from `provider` and `modelId`. */
export function aiSdkModelId(model: { provider: string; modelId: string }): string {
  const [first, second] = model.provider.toLowerCase().split('.');
  if (first === 'gateway' && model.modelId.includes('/')) {
    const [provider, ...rest] = model.modelId.split('/');
    return `${PROVIDER_IDS[provider] ?? provider}/${rest.join('/')}`;
  }
  // Anthropic's models on Vertex (`vertex.anthropic.messages`) are Anthropic's models.
  if (first === 'vertex' && second === 'anthropic') return `anthropic/${model.modelId}`;
  return `${PROVIDER_IDS[first] ?? first}/${model.modelId}`;
}
