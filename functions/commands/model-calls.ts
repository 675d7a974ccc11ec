import { DEFAULT_MODEL_CALL_LEASE_SECONDS } from '../core/config';
import type { RunRecord } from '../core/model';
import {
  decideReservation,
  decideSettlement,
  type ModelCallRecord,
  type ModelCallRequest,
  modelCallIdFor,
  type Refusal,
  requestHashOf,
  settlementView,
} from '../core/model-calls';
import { modelPricing, type TokenUsage } from '../core/model-prices';
import {
  ModelCallChangedError,
  ModelCallExistsError,
  type ModelCallStore,
  RunChangedError,
  type RateLimitStore,
  type RunStore,
  type Deps,
  type SpendCounterStore,
  type TraceStore,
  type WithStore,
} from '../core/ports';
import { refsOf, spendLimitOf, spendLimitRefusal, spendTakes } from '../core/spend-limits';
import { modelRateTakes, secondsToNextMinute } from '../core/rate-limits';
import { centsOfMicros } from '../core/spend';
import { rollupOfModelCharge } from '../core/rollups';
import { addToRollup } from '../steps/rollups';
import { tellThresholds } from './budget-thresholds';

type ModelCallDeps = WithStore<
  ModelCallStore &
    SpendCounterStore &
    Pick<TraceStore, 'appendRunEvents'> &
    Pick<RunStore, 'getRun'> &
    Pick<RateLimitStore, 'takeRateCount' | 'giveBackRateCount'>
> &
  Partial<Pick<Deps, 'metrics' | 'notifier'>>;

export type ReserveResult =
  | { kind: 'reserved'; modelCallId: string; reservedCents: number; replayed: boolean }
  | { kind: 'refused'; refusal: Refusal }
  /** No price, no context window, or a model id that is not `<provider>/<model>` (400). */
  | { kind: 'invalid'; message: string }
  /** The same requestId came with another body. */
  | { kind: 'conflict' }
  | { kind: 'run_closed' }
  /** Over a `rateLimits` entry that names the model: nothing reserved. */
  | { kind: 'throttled'; message: string; retryAfterSeconds: number };

const reservedAnswer = (call: ModelCallRecord, replayed: boolean): ReserveResult => ({
  kind: 'reserved',
  modelCallId: call.modelCallId,
  reservedCents: centsOfMicros(call.reservedMicros),
  replayed,
});

/**
 * Reserves a model call's most it can cost against its run before the call: priced now, written in one
 * conditional write with the run's spend fields, decided again whenever the run moved meanwhile.
 */
export async function reserveModelCall(deps: ModelCallDeps, run: RunRecord, request: ModelCallRequest): Promise<ReserveResult> {
  const counted: string[] = [];
  try {
    const result = await reserveCounted(deps, run, request, counted);
    // Only a reservation made keeps its counts: a refused or throttled one gives them back.
    if (result.kind !== 'reserved' || result.replayed) await Promise.all(counted.map((key) => deps.store.giveBackRateCount(key)));
    return result;
  } catch (error) {
    await Promise.all(counted.map((key) => deps.store.giveBackRateCount(key)));
    throw error;
  }
}

async function reserveCounted(deps: ModelCallDeps, run: RunRecord, request: ModelCallRequest, counted: string[]): Promise<ReserveResult> {
  const config = await deps.config();
  const modelCallId = modelCallIdFor(run.runId, request.requestId);
  const replay = (existing: ModelCallRecord): ReserveResult =>
    existing.requestHash === requestHashOf(request) ? reservedAnswer(existing, true) : { kind: 'conflict' };
  // A retry of a reservation already made answers it, whatever the run's budget says now.
  const existing = await deps.store.getModelCall(modelCallId);
  if (existing) return replay(existing);
  let current = run;
  for (;;) {
    const now = deps.now();
    const priced = modelPricing(request.model, config.modelPrices, now);
    if (!priced.ok) return { kind: 'invalid', message: priced.message };
    const decision = decideReservation({
      run: current,
      request,
      pricing: priced.pricing,
      now,
      leaseSeconds: config.modelCallLeaseSeconds ?? DEFAULT_MODEL_CALL_LEASE_SECONDS,
    });
    if (decision.kind === 'unpriceable') return { kind: 'invalid', message: decision.message };
    if (decision.kind === 'run_closed') return { kind: 'run_closed' };
    if (decision.kind === 'refused') return decision;
    // Config `spendLimits`: the principal's counters as read; the reservation's write holds them to their caps.
    const takes = spendTakes(config.spendLimits, run.principalId, now, decision.reservedMicros);
    const overLimit = takes.length ? spendLimitRefusal(takes, await deps.store.getSpendCounters(takes)) : undefined;
    if (overLimit) return { kind: 'refused', refusal: { status: 'refused', code: 'spend_limit', message: overLimit } };
    // Counted once, for a reservation that would be made; a decision taken again keeps the counts taken.
    if (!counted.length) {
      for (const take of modelRateTakes(config.rateLimits, { model: request.model, principal: run.principalId }, now)) {
        if (!(await deps.store.takeRateCount(take.counterKey, take.limit, take.expiresAtEpoch))) {
          const retryAfterSeconds = secondsToNextMinute(now);
          return {
            kind: 'throttled',
            retryAfterSeconds,
            message: `throttled: model calls to ${request.model} for ${run.principalId} are over their rate limit (at most ${take.limit} a minute); retry in ${retryAfterSeconds} s`,
          };
        }
        counted.push(take.counterKey);
      }
    }
    try {
      const call = takes.length ? { ...decision.call, spendCounters: refsOf(takes) } : decision.call;
      const made = await deps.store.reserveModelCall({
        run: current,
        call,
        events: decision.events,
        ...(takes.length ? { spend: takes } : {}),
      });
      await tellThresholds(deps, current, takes);
      return reservedAnswer(made, false);
    } catch (error) {
      if (error instanceof ModelCallExistsError) return replay(error.existing);
      if (!(error instanceof RunChangedError)) throw error;
      const fresh = await deps.store.getRun(run.runId);
      if (!fresh) throw error;
      current = fresh;
    }
  }
}

export type SettleResult =
  | { kind: 'settled'; view: ReturnType<typeof settlementView>; replayed: boolean }
  | { kind: 'not_found' }
  | { kind: 'invalid_state'; message: string };

/**
 * Settles a reserved model call at the price of what it used (an overrun charged in full); after its lease
 * the reservation is charged in full instead and the settlement refused.
 */
export async function settleModelCall(deps: ModelCallDeps, run: RunRecord, modelCallId: string, usage: TokenUsage): Promise<SettleResult> {
  const config = await deps.config();
  for (;;) {
    const call = await deps.store.getModelCall(modelCallId);
    if (!call || call.runId !== run.runId) return { kind: 'not_found' };
    const now = deps.now();
    const priced = modelPricing(call.model, config.modelPrices, now);
    // A price removed from config since the reservation: the call is charged what it reserved.
    const pricing = priced.ok ? priced.pricing : { canonicalId: call.model, microsOf: () => call.reservedMicros };
    const decision = decideSettlement(call, usage, pricing, now);
    if (decision.kind === 'replay') return { kind: 'settled', view: settlementView(call), replayed: true };
    if (decision.kind === 'invalid_state') return decision;
    try {
      const after = await deps.store.chargeModelCall({ before: call, after: decision.after, events: decision.events });
      await addToRollup(deps, rollupOfModelCharge(after.model, after.chargedMicros ?? 0, deps.now(), after.expiresAtEpoch));
      await tellOverrun(deps, run, call, after);
      if (decision.kind === 'expire')
        return { kind: 'invalid_state', message: 'this model call’s lease ran out: its reservation was charged in full' };
      return { kind: 'settled', view: settlementView(after), replayed: false };
    } catch (error) {
      // Settled or expired meanwhile (another settlement, the sweeper): decide on what is there now.
      if (!(error instanceof ModelCallChangedError)) throw error;
    }
  }
}

/** A settlement above its reservation moved the run's and the counters' held spend up: the thresholds reached are told. */
async function tellOverrun(deps: ModelCallDeps, run: RunRecord, before: ModelCallRecord, after: ModelCallRecord): Promise<void> {
  if ((after.chargedMicros ?? 0) <= before.reservedMicros) return;
  const limit = spendLimitOf((await deps.config()).spendLimits, run.principalId);
  const counters = (before.spendCounters ?? []).flatMap((ref) => {
    const capCents = ref.period === 'day' ? limit?.perDayCents : limit?.perMonthCents;
    return capCents === undefined ? [] : [{ ...ref, capCents }];
  });
  await tellThresholds(deps, run, counters);
}
