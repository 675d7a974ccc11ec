import { logOf } from '../core/log';
import type { OperationRecord } from '../core/model';
import type { RollupStore, WithStore } from '../core/ports';
import { type RollupAddition, rollupOfReport } from '../core/rollups';

/** Deps whose store may keep rollups (every store the runner composes does; a narrowed test store may not). */
export type RollupDeps = Pick<WithStore<object>, 'store' | 'now' | 'log'>;

const keepsRollups = (store: object): store is RollupStore => typeof (store as Partial<RollupStore>).addToRollup === 'function';

/**
 * The overview's one write for a call, after the write that recorded its envelope (so the caller's answer is
 * durable, and told to an in-process waiter, before it): the minute's counters. It never fails the step that
 * calls it: a lost addition costs the overview one call, never the call its result.
 */
export async function rollUpReport(deps: RollupDeps, before: OperationRecord | undefined, after: OperationRecord): Promise<void> {
  await addToRollup(deps, rollupOfReport(before, after, deps.now()));
}

export async function addToRollup(deps: RollupDeps, addition: RollupAddition | undefined): Promise<void> {
  if (!addition || !keepsRollups(deps.store)) return;
  try {
    await deps.store.addToRollup(addition);
  } catch (error) {
    logOf(deps).warn('rollup not written', { minute: addition.minute, error: (error as Error).name, detail: (error as Error).message });
  }
}
