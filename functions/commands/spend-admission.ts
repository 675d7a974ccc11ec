import type { Admission } from '../core/budgets';
import type { RunRecord } from '../core/model';
import type { SpendCounterStore, WithStore } from '../core/ports';
import { microsOfCents } from '../core/spend';
import { type SpendLimit, type SpendTake, spendLimitRefusal, spendTakes } from '../core/spend-limits';

/**
 * A tool call's admission with the principal's spend limits (config `spendLimits`): the counters its cost
 * moves, read now; a call that does not fit one is refused `spend_limit`. The admitting write holds the same
 * counters to their caps, so a decision taken on counters that moved meanwhile is taken again. Without
 * limits, or for a call that costs nothing, nothing is read and the admission is as it was.
 */
export async function withSpendLimits(
  deps: WithStore<SpendCounterStore>,
  limits: readonly SpendLimit[] | undefined,
  run: RunRecord,
  admission: Admission,
  costCents: number,
  now: number,
): Promise<{ admission: Admission; takes: SpendTake[] }> {
  const takes = admission.admitted ? spendTakes(limits, run.principalId, now, microsOfCents(costCents)) : [];
  if (!takes.length) return { admission, takes };
  const refusal = spendLimitRefusal(takes, await deps.store.getSpendCounters(takes));
  return refusal ? { admission: { admitted: false, reason: 'spend_limit', message: refusal }, takes: [] } : { admission, takes };
}
