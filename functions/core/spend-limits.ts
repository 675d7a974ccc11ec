import { z } from 'zod';
import { centsOfMicros, microsOfCents } from './spend';

/**
 * Spend across runs per principal and UTC day or month (config `spendLimits`). Each principal's spend of a
 * period is one counter (tool costs, charged model calls and open reservations, in micro-cents) that the
 * admitting write of a call moves in the same transaction as the run, on condition it stays within the cap.
 */
export const SpendLimitSchema = z
  .strictObject({
    /** A principal's id, or `"*"`: every principal, each counted on its own. */
    principal: z.string().min(1).max(1000),
    perDayCents: z.number().int().min(0).max(1_000_000_000).optional(),
    perMonthCents: z.number().int().min(0).max(1_000_000_000).optional(),
  })
  .refine((l) => l.perDayCents !== undefined || l.perMonthCents !== undefined, {
    message: 'a spend limit needs perDayCents, perMonthCents or both',
  });

export type SpendLimit = z.infer<typeof SpendLimitSchema>;

/** The config's issues with its spend limits: a second entry for one scope, a principal that does not exist. */
export function spendLimitIssues(limits: readonly SpendLimit[], principalIds: ReadonlySet<string>): { index: number; message: string }[] {
  const issues: { index: number; message: string }[] = [];
  const seen = new Set<string>();
  for (const [index, limit] of limits.entries()) {
    if (seen.has(limit.principal))
      issues.push({
        index,
        message: `another spend limit names ${JSON.stringify(limit.principal)}: put perDayCents and perMonthCents in one entry`,
      });
    seen.add(limit.principal);
    if (limit.principal !== '*' && !principalIds.has(limit.principal))
      issues.push({ index, message: `there is no principal ${JSON.stringify(limit.principal)} (a spend limit names a principal or "*")` });
  }
  return issues;
}

/** A principal's own entry, else the `"*"` entry: the more specific one decides, as a principal's own grant would. */
export function spendLimitOf(limits: readonly SpendLimit[] | undefined, principalId: string): SpendLimit | undefined {
  return limits?.find((l) => l.principal === principalId) ?? limits?.find((l) => l.principal === '*');
}

export type SpendPeriod = 'day' | 'month';

/** One counter: a principal's spend in one UTC day or month. */
export interface SpendCounterRef {
  principalId: string;
  period: SpendPeriod;
  /** `2026-12-07` or `2026-12`. */
  periodKey: string;
  /** Epoch seconds: the counter is dropped (TTL) a while after its period ends. */
  expiresAtEpoch: number;
}

/** What one call adds to one counter, and the cap it must stay within. */
export interface SpendTake extends SpendCounterRef {
  micros: number;
  capCents: number;
  /** When the period ends and the counter starts again (ISO UTC). */
  resetsAt: string;
}

/** A counter is kept a month after its period ends (what a person looking back may ask), then dropped. */
const KEEP_AFTER_PERIOD_SECONDS = 31 * 86400;

export function counterKeyOf(ref: Pick<SpendCounterRef, 'principalId' | 'period' | 'periodKey'>): string {
  return `${ref.period}#${ref.periodKey}#${ref.principalId}`;
}

/** The UTC day and month `now` falls in, and when each ends. */
export function periodsAt(now: number): Record<SpendPeriod, { key: string; endsAt: number }> {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const iso = d.toISOString();
  return {
    day: { key: iso.slice(0, 10), endsAt: Date.UTC(y, m, d.getUTCDate() + 1) },
    month: { key: iso.slice(0, 7), endsAt: Date.UTC(y, m + 1, 1) },
  };
}

/**
 * The counters a call of `micros` for `principalId` moves at `now`: none without a limit that applies, and none
 * for a call that costs nothing (nothing to hold; the admitting write then stays as it is without limits).
 */
export function spendTakes(limits: readonly SpendLimit[] | undefined, principalId: string, now: number, micros: number): SpendTake[] {
  const limit = spendLimitOf(limits, principalId);
  if (!limit || micros <= 0) return [];
  const periods = periodsAt(now);
  const take = (period: SpendPeriod, capCents: number): SpendTake => ({
    principalId,
    period,
    periodKey: periods[period].key,
    expiresAtEpoch: Math.ceil(periods[period].endsAt / 1000) + KEEP_AFTER_PERIOD_SECONDS,
    micros,
    capCents,
    resetsAt: new Date(periods[period].endsAt).toISOString(),
  });
  return [
    ...(limit.perDayCents !== undefined ? [take('day', limit.perDayCents)] : []),
    ...(limit.perMonthCents !== undefined ? [take('month', limit.perMonthCents)] : []),
  ];
}

/** Whether `take` still fits a counter holding `heldMicros`: the condition the admitting write checks. */
export function takeFits(take: SpendTake, heldMicros: number): boolean {
  return heldMicros + take.micros <= microsOfCents(take.capCents);
}

/** The refusal of a call that does not fit one of its counters (as read), naming the limit and when it resets. */
export function spendLimitRefusal(takes: readonly SpendTake[], counters: Readonly<Record<string, number>>): string | undefined {
  for (const take of takes) {
    const held = counters[counterKeyOf(take)] ?? 0;
    if (takeFits(take, held)) continue;
    const left = Math.max(0, microsOfCents(take.capCents) - held);
    return (
      `the spend limit of principal ${JSON.stringify(take.principalId)} is ${take.capCents} cents per ${take.period} (spendLimits): ` +
      `this call could cost ${centsOfMicros(take.micros)} cents and ${centsOfMicros(left)} are left; it resets at ${take.resetsAt}`
    );
  }
  return undefined;
}

/** The counters a call's takes moved, as a model call keeps them to adjust at its settlement or expiry. */
export function refsOf(takes: readonly SpendTake[]): SpendCounterRef[] {
  return takes.map(({ principalId, period, periodKey, expiresAtEpoch }) => ({ principalId, period, periodKey, expiresAtEpoch }));
}
