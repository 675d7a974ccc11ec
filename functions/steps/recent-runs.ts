import type { RunRecord } from '../core/model';
import type { RecentRuns } from '../core/ports';

/**
 * Open runs this process read or admitted a call into, so the next call into the same run is admitted
 * without reading it first (one DynamoDB round trip fewer on every call after a run's first in a warm process).
 *
 * Safe because a remembered open run can only be behind the stored one: its owner, budgets and deadline never
 * change, its usage and last turn only grow, and it may have closed since. Admitting into an open run is a
 * write conditioned on the stored run (see `admissionHolds`), so a call admitted on a remembered run that has
 * moved meanwhile fails that condition, and the submission reads the run and decides again. A closed run is
 * not remembered: a call into it writes nothing conditioned on the run (an exhausted run can still be
 * cancelled), so it is read each time.
 *
 * Only what admission and a proposal read is kept (not the run's metadata, which may be large), bounded in
 * entries and age: a run not called into for `ttlMs` is read again, and the least recently used go first.
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
      if (run.status !== 'open') return;
      const { metadata: _metadata, ...kept } = run;
      entries.set(run.runId, { run: kept, at: now() });
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
  };
}
