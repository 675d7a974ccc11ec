import { microsOfCents } from './spend';
import type { SpendCounterRef, SpendPeriod } from './spend-limits';
import { type NewTraceEvent, TraceType } from './trace';

/** The shares of a limit whose crossing is told (`budget.threshold`), once each per run or principal counter. */
export const THRESHOLD_PERCENTS = [50, 80, 100] as const;

/** What crossing a threshold tells: the trace event's detail, the notice's body. */
export interface BudgetThresholdNotice {
  scope: 'run' | 'principal';
  percent: number;
  limitCents: number;
  /** What the run or the counter holds after the write that crossed (spent and reserved), in cents. */
  spentCents: number;
  runId: string;
  /** The run's owner (scope run) or the counter's principal (scope principal): the same principal. */
  principalId: string;
  period?: SpendPeriod;
  periodKey?: string;
}

/** Where a threshold's mark is kept: the run, or one of a principal's spend counters. */
export type ThresholdTarget = { scope: 'run'; runId: string } | { scope: 'principal'; ref: SpendCounterRef };

/** The micro-cents at which `percent` of a cap of `capCents` is reached. */
export function thresholdMicros(capCents: number, percent: number): number {
  return Math.ceil((microsOfCents(capCents) * percent) / 100);
}

/**
 * The thresholds reached by what a run or counter holds, read after a write, and not marked told yet; a cap
 * of 0 has none. Which of several writers tells one is decided by a conditional mark, so each is told once.
 */
export function untoldPercents(heldMicros: number, marked: readonly number[], capCents: number): number[] {
  if (capCents <= 0) return [];
  return THRESHOLD_PERCENTS.filter((p) => thresholdMicros(capCents, p) <= heldMicros && !marked.includes(p));
}

export function thresholdEvent(notice: BudgetThresholdNotice): NewTraceEvent {
  const { scope, percent, limitCents, spentCents, principalId, period, periodKey } = notice;
  return {
    type: TraceType.budgetThreshold,
    detail: { scope, percent, limitCents, spentCents, principalId, ...(period ? { period, periodKey } : {}) },
  };
}

export function budgetThresholdText(n: BudgetThresholdNotice): string {
  const what =
    n.scope === 'run'
      ? `run ${n.runId} (${n.principalId}) holds ${n.spentCents} of its ${n.limitCents} cents (maxSpendCents)`
      : `principal ${n.principalId} holds ${n.spentCents} of its ${n.limitCents} cents per ${n.period} (spendLimits, ${n.periodKey}; run ${n.runId})`;
  return `spend at ${n.percent}%: ${what}.`;
}
