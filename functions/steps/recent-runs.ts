import type { RunRecord } from '../core/model';
import type { RecentRuns } from '../core/ports';

/**
 * Runs this process read or admitted a call into, so the next call into the same run is admitted without
 * reading it first (one DynamoDB round trip fewer on every call after a run's first in a warm process).
 *
 * Safe because a remembered run can only be behind the stored one, never ahead: its owner, budgets and
 * deadline never change, its usage and last turn only grow, and its status only leaves `open`. The admission
 * write is conditioned on the stored run (see `admissionHolds`), so a call admitted on a remembered run that
 * has moved meanwhile fails that condition, and the submission reads the run and decides again; a remembered
 * run that says closed or exhausted is so in the store too.
 *
 * Bounded in entries and age: a run not called into for `ttlMs` is read again, and the oldest go first.
 */
export function recentRuns(options: { maxEntries?: number; ttlMs?: number; now?: () => number } = {}): RecentRuns {
  const { maxEntries = 1000, ttlMs = 5 * 60_000, now = Date.now } = options;
  // A Map iterates in insertion order: re-inserting on each remember keeps the least recently used first.
  const entries = new Map<string, { run: RunRecord; at: number }>();
  return {
    get(runId) {
      const entry = entries.get(runId);
      if (!entry) return undefined;
      if (now() - entry.at > ttlMs) {
        entries.delete(runId);
        return undefined;
      }
      return entry.run;
    },
    remember(run) {
      entries.delete(run.runId);
      entries.set(run.runId, { run, at: now() });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
  };
}
