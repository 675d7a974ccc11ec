import { createHash } from 'node:crypto';
import { withClock } from './budgets';
import { hashValue } from './canonical';
import type { RunRecord, Usage } from './model';
import type { ModelPricing, TokenUsage } from './model-prices';
import { centsOfMicros, heldMicrosOf, microsOfCents } from './spend';
import type { SpendCounterRef } from './spend-limits';
import { type NewTraceEvent, TraceType } from './trace';

/** What an agent asks to reserve before a model call (`POST /v1/runs/{runId}/model-calls`). */
export interface ModelCallRequest {
  requestId: string;
  model: string;
  maxOutputTokens: number;
  inputTokens?: number;
}

export type ModelCallState = 'reserved' | 'settled' | 'expired';

/** One model call of a run: its reservation, then its settlement or its expiry. */
export interface ModelCallRecord {
  modelCallId: string;
  runId: string;
  requestId: string;
  /** The hash of the reservation's body: the same requestId with another body is refused. */
  requestHash: string;
  /** The canonical model id (`<provider>/<model>` as priced). */
  model: string;
  reservedMicros: number;
  state: ModelCallState;
  createdAt: string;
  /** After this the reservation is charged in full and a settlement is refused. */
  leaseUntil: string;
  usage?: TokenUsage;
  /** What was charged: the price of `usage`, or the reservation where the lease ran out. */
  chargedMicros?: number;
  /** Epoch seconds: removed with its run (retention). */
  expiresAtEpoch?: number;
  /** The principal's spend counters the reservation moved (config `spendLimits`): its charge adjusts the same ones. */
  spendCounters?: SpendCounterRef[];
}

/** One model call per (runId, requestId): the id is derived, so a retried reservation can only address the same record. */
export function modelCallIdFor(runId: string, requestId: string): string {
  const digest = createHash('sha256').update(`model-call\u0000${runId}\u0000${requestId}`).digest('base64url').slice(0, 26);
  return `mc_${digest.replace(/[^A-Za-z0-9]/g, 'x')}`;
}

export function requestHashOf(request: ModelCallRequest): string {
  return hashValue({
    model: request.model,
    maxOutputTokens: request.maxOutputTokens,
    ...(request.inputTokens !== undefined ? { inputTokens: request.inputTokens } : {}),
  });
}

export type Refusal = { status: 'refused'; code: 'budget_exhausted' | 'spend_limit'; message: string };

export type ReserveDecision =
  | { kind: 'reserve'; reservedMicros: number; call: ModelCallRecord; events: NewTraceEvent[] }
  | { kind: 'refused'; refusal: Refusal }
  /** No price or no context window: refused before anything is read or written (400). */
  | { kind: 'unpriceable'; message: string }
  | { kind: 'run_closed' };

/** What a reservation of `model` for `request` costs: its input tokens (or the whole context window) and its most output. */
export function reservationMicros(
  pricing: ModelPricing,
  request: ModelCallRequest,
): { ok: true; micros: number } | { ok: false; message: string } {
  const inputTokens = request.inputTokens ?? pricing.contextWindow;
  if (inputTokens === undefined)
    return {
      ok: false,
      message: `the context window of model "${pricing.canonicalId}" is unknown: send inputTokens to reserve for this call`,
    };
  return { ok: true, micros: pricing.microsOf({ inputTokens, outputTokens: request.maxOutputTokens }) };
}

/**
 * Decides a reservation against the run as read: the run's cap covers tool and model spend and open
 * reservations. A refusal reserves nothing and leaves the run open (a smaller request may fit).
 */
export function decideReservation(input: {
  run: RunRecord;
  request: ModelCallRequest;
  pricing: ModelPricing;
  now: number;
  leaseSeconds: number;
}): ReserveDecision {
  const { run, request, pricing, now, leaseSeconds } = input;
  const cost = reservationMicros(pricing, request);
  if (!cost.ok) return { kind: 'unpriceable', message: cost.message };
  const clocked = withClock(run, now);
  if (clocked.status === 'cancelled') return { kind: 'run_closed' };
  if (clocked.status !== 'open')
    return {
      kind: 'refused',
      refusal: {
        status: 'refused',
        code: 'budget_exhausted',
        message: clocked.status === 'expired' ? 'the run reached its wall-clock budget' : 'the run has exhausted its budget',
      },
    };
  const held = heldMicrosOf(run.usage);
  const cap = microsOfCents(run.budgets.maxSpendCents);
  if (held + cost.micros > cap)
    return {
      kind: 'refused',
      refusal: {
        status: 'refused',
        code: 'budget_exhausted',
        message: `this model call could cost ${centsOfMicros(cost.micros)} cents; the run has ${centsOfMicros(Math.max(0, cap - held))} of its ${run.budgets.maxSpendCents} cents left (maxSpendCents)`,
      },
    };
  const modelCallId = modelCallIdFor(run.runId, request.requestId);
  const call: ModelCallRecord = {
    modelCallId,
    runId: run.runId,
    requestId: request.requestId,
    requestHash: requestHashOf(request),
    model: pricing.canonicalId,
    reservedMicros: cost.micros,
    state: 'reserved',
    createdAt: new Date(now).toISOString(),
    leaseUntil: new Date(now + leaseSeconds * 1000).toISOString(),
    ...(run.expiresAtEpoch !== undefined ? { expiresAtEpoch: run.expiresAtEpoch } : {}),
  };
  return {
    kind: 'reserve',
    reservedMicros: cost.micros,
    call,
    events: [
      {
        type: TraceType.modelCallReserved,
        detail: { modelCallId, model: pricing.canonicalId, reservedCents: centsOfMicros(cost.micros), requestId: request.requestId },
      },
    ],
  };
}

/** The run's usage after a reservation of `micros`. */
export function withReservation(usage: Usage, micros: number): Usage {
  return {
    ...usage,
    modelSpendMicros: usage.modelSpendMicros ?? 0,
    reservedMicros: (usage.reservedMicros ?? 0) + micros,
    heldMicros: heldMicrosOf(usage) + micros,
  };
}

/** The run's usage after a reservation of `reservedMicros` is charged `chargedMicros` (settled or expired). */
export function withCharge(usage: Usage, reservedMicros: number, chargedMicros: number): Usage {
  return {
    ...usage,
    modelSpendMicros: (usage.modelSpendMicros ?? 0) + chargedMicros,
    reservedMicros: (usage.reservedMicros ?? 0) - reservedMicros,
    heldMicros: heldMicrosOf(usage) - reservedMicros + chargedMicros,
  };
}

export type SettleDecision =
  | { kind: 'settle'; after: ModelCallRecord; events: NewTraceEvent[] }
  /** Settled before with the same usage: answer the same. */
  | { kind: 'replay' }
  | { kind: 'invalid_state'; message: string }
  /** The lease ran out: charge the reservation in full, then refuse the settlement. */
  | { kind: 'expire'; after: ModelCallRecord; events: NewTraceEvent[] };

const sameUsage = (a: TokenUsage | undefined, b: TokenUsage) =>
  a !== undefined &&
  a.inputTokens === b.inputTokens &&
  a.outputTokens === b.outputTokens &&
  (a.cachedInputTokens ?? 0) === (b.cachedInputTokens ?? 0);

/** Decides a settlement of `call` with `usage` at `now`, priced by `pricing` (the call's model). */
export function decideSettlement(call: ModelCallRecord, usage: TokenUsage, pricing: ModelPricing, now: number): SettleDecision {
  if (call.state === 'settled')
    return sameUsage(call.usage, usage)
      ? { kind: 'replay' }
      : { kind: 'invalid_state', message: 'this model call was already settled with other usage' };
  if (call.state === 'expired')
    return { kind: 'invalid_state', message: 'this model call’s lease ran out: its reservation was charged in full' };
  if (now >= Date.parse(call.leaseUntil)) return expiry(call);
  const charged = pricing.microsOf(usage);
  const after: ModelCallRecord = { ...call, state: 'settled', usage: normalUsage(usage), chargedMicros: charged };
  const cents = { reservedCents: centsOfMicros(call.reservedMicros), chargedCents: centsOfMicros(charged) };
  const events: NewTraceEvent[] = [
    { type: TraceType.modelCallSettled, detail: { modelCallId: call.modelCallId, model: call.model, ...cents, ...normalUsage(usage) } },
  ];
  if (charged > call.reservedMicros)
    events.push({ type: TraceType.modelCallOverrun, detail: { modelCallId: call.modelCallId, model: call.model, ...cents } });
  return { kind: 'settle', after, events };
}

/** A reservation whose lease ran out: charged in full (fail closed: the call may have happened). */
export function expiry(call: ModelCallRecord): Extract<SettleDecision, { kind: 'expire' }> {
  return {
    kind: 'expire',
    after: { ...call, state: 'expired', chargedMicros: call.reservedMicros },
    events: [
      {
        type: TraceType.modelCallExpired,
        detail: { modelCallId: call.modelCallId, model: call.model, chargedCents: centsOfMicros(call.reservedMicros) },
      },
    ],
  };
}

function normalUsage(usage: TokenUsage): TokenUsage {
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    ...(usage.cachedInputTokens ? { cachedInputTokens: usage.cachedInputTokens } : {}),
  };
}

/** What a settled model call answers (and answers again on a replay). */
export function settlementView(call: ModelCallRecord) {
  return {
    modelCallId: call.modelCallId,
    status: call.state,
    model: call.model,
    reservedCents: centsOfMicros(call.reservedMicros),
    chargedCents: centsOfMicros(call.chargedMicros ?? 0),
  };
}
