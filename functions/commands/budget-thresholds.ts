import {
  type BudgetThresholdNotice,
  type ThresholdTarget,
  thresholdEvent,
  thresholdMicros,
  untoldPercents,
} from '../core/budget-thresholds';
import { defaultLog } from '../core/log';
import { MetricName } from '../core/metric-names';
import type { RunRecord } from '../core/model';
import type { Deps, SpendCounterStore, TraceStore, WithStore } from '../core/ports';
import { centsOfMicros } from '../core/spend';
import type { SpendCounterRef, SpendPeriod } from '../core/spend-limits';

type ThresholdDeps = WithStore<SpendCounterStore & Pick<TraceStore, 'appendRunEvents'>> & Partial<Pick<Deps, 'metrics' | 'notifier'>>;

/**
 * After a write that added spend to `run` (and to the principal's `counters`, each with its cap): tells each
 * threshold (50%, 80%, 100%) of the run's `maxSpendCents` and of the counters' limits that is reached and not
 * yet told, as a `budget.threshold` trace event, a metric and a notice. What is held is read after the write
 * (concurrent writers each read what all of them wrote) and a conditional mark decides which writer tells, so
 * each threshold is told once. Telling never fails the call: a failure is logged.
 */
export async function tellThresholds(
  deps: ThresholdDeps,
  run: RunRecord,
  counters: readonly (SpendCounterRef & { capCents: number })[] = [],
): Promise<void> {
  try {
    const notices: BudgetThresholdNotice[] = [];
    const scopes: { target: ThresholdTarget; capCents: number; period?: SpendPeriod; periodKey?: string }[] = [
      { target: { scope: 'run', runId: run.runId }, capCents: run.budgets.maxSpendCents },
      ...counters.map((c) => ({
        target: { scope: 'principal' as const, ref: c },
        capCents: c.capCents,
        period: c.period,
        periodKey: c.periodKey,
      })),
    ];
    for (const { target, capCents, period, periodKey } of scopes) {
      const now = await deps.store.readThresholds(target);
      for (const percent of untoldPercents(now.heldMicros, now.marked, capCents))
        if (await deps.store.markThreshold(target, percent, thresholdMicros(capCents, percent)))
          notices.push({
            scope: target.scope,
            percent,
            limitCents: capCents,
            spentCents: centsOfMicros(now.heldMicros),
            runId: run.runId,
            principalId: run.principalId,
            ...(period ? { period, periodKey } : {}),
          });
    }
    if (!notices.length) return;
    await deps.store.appendRunEvents(run.runId, notices.map(thresholdEvent), run.expiresAtEpoch);
    for (const n of notices) deps.metrics?.count(MetricName.budgetThresholds, { scope: n.scope, percent: String(n.percent) });
    await Promise.all(notices.map((n) => deps.notifier?.budgetThreshold?.(n)));
  } catch (error) {
    defaultLog().warn('telling a spend threshold failed', { runId: run.runId, error: (error as Error).message });
  }
}
