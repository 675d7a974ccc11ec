import { logOf } from '../core/log';
import type { OperationRecord } from '../core/model';
import type { RollupStore, WithStore } from '../core/ports';
import { type RollupAddition, rollupOfReport } from '../core/rollups';

/** Deps whose store may keep rollups (every store the runner composes does; a narrowed test store may not). */
export type RollupDeps = Pick<WithStore<object>, 'store' | 'now' | 'log'>;

const keepsRollups = (store: object): store is RollupStore => typeof (store as Partial<RollupStore>).addToRollup === 'function';

/**
 * The overview's addition for a call, after the write that recorded its envelope (so the caller's answer is
 * durable, and told to an in-process waiter, before it): the minute's counters, written as `addToRollup` says.
 * It never fails the step that calls it.
 */
export async function rollUpReport(deps: RollupDeps, before: OperationRecord | undefined, after: OperationRecord): Promise<void> {
  await addToRollup(deps, rollupOfReport(before, after, deps.now()));
}

/**
 * A rollup write per call would cost as much as a fifth of a call's own writes, so each process sums its
 * additions per minute and writes them at most once per `ROLLUP_FLUSH_MS`: a call after a quiet spell is
 * written at once (low traffic stays exact and current), a burst is summed and written by the first call
 * after the interval (or, outside Lambda, by a timer). What a process holds when it ends unannounced (a
 * crash, a Lambda environment recycled while idle) is lost: at most one interval of that process's calls,
 * which the overview may then under-count. Never more than one extra write per call.
 */
export const ROLLUP_FLUSH_MS = Number(process.env.TOOLRUNNER_ROLLUP_FLUSH_MS ?? 10_000);

interface Pending {
  additions: Map<string, RollupAddition>;
  lastFlushAt: number;
  flushing?: Promise<void>;
  timer?: ReturnType<typeof setTimeout>;
}
const pendingByStore = new WeakMap<object, Pending>();

export async function addToRollup(deps: RollupDeps, addition: RollupAddition | undefined): Promise<void> {
  if (!addition || !keepsRollups(deps.store)) return;
  const store = deps.store;
  let pending = pendingByStore.get(store);
  if (!pending) {
    pending = { additions: new Map(), lastFlushAt: Number.NEGATIVE_INFINITY };
    pendingByStore.set(store, pending);
  }
  merge(pending.additions, addition);
  if (deps.now() - pending.lastFlushAt >= ROLLUP_FLUSH_MS) await flush(deps, store, pending);
  else if (!pending.timer && !process.env.AWS_LAMBDA_FUNCTION_NAME) {
    // Outside Lambda a process lives on between calls: the last burst is written without waiting for a call.
    const wait = Math.max(0, pending.lastFlushAt + ROLLUP_FLUSH_MS - deps.now());
    pending.timer = setTimeout(() => {
      pending.timer = undefined;
      void flush(deps, store, pending);
    }, wait);
    pending.timer.unref?.();
  }
}

/** Sums an addition into the minute's pending one (counters add; the item lives as long as its longest record). */
function merge(additions: Map<string, RollupAddition>, addition: RollupAddition): void {
  const held = additions.get(addition.minute);
  if (!held) {
    additions.set(addition.minute, { ...addition, counters: { ...addition.counters } });
    return;
  }
  for (const [name, n] of Object.entries(addition.counters)) held.counters[name] = (held.counters[name] ?? 0) + n;
  if (addition.expiresAtEpoch !== undefined) held.expiresAtEpoch = Math.max(held.expiresAtEpoch ?? 0, addition.expiresAtEpoch);
}

async function flush(deps: RollupDeps, store: RollupStore, pending: Pending): Promise<void> {
  if (pending.flushing) return pending.flushing;
  pending.lastFlushAt = deps.now();
  const due = [...pending.additions.values()];
  pending.additions.clear();
  pending.flushing = (async () => {
    for (const addition of due) {
      try {
        await store.addToRollup(addition);
      } catch (error) {
        // A lost addition costs the overview these calls, never a call its result.
        logOf(deps).warn('rollup not written', { minute: addition.minute, error: (error as Error).name, detail: (error as Error).message });
      }
    }
  })().finally(() => {
    pending.flushing = undefined;
  });
  return pending.flushing;
}
