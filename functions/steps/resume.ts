import { resumeEvents } from '../core/attempt-protocol';
import { accepts } from '../core/transition-table';
import { isActive } from '../core/record-predicates';
import type { ModelCallStore, OperationStore, RateLimitStore, RecoveryStore, WithStore } from '../core/ports';
import { advance } from './advance';
import { executionNameOf } from './deps';
import { expireModelCallIfDue, isModelCallId } from './model-call-expiry';

/** The store roles resuming uses: the operation, the rate slots a settling write frees, the sweeper's walk. */
export type ResumeDeps = WithStore<OperationStore & RateLimitStore & RecoveryStore & Partial<ModelCallStore>>;

/**
 * Starts a fresh execution for an operation whose own execution was lost (a crash, an expired lease,
 * a dead task token). Claiming is a conditional write, so two sweepers never resume the same one twice.
 * An attempt in flight at the crash is presumed lost (it may have reached the upstream), so the new
 * execution reconciles it instead of sending it blindly. The new execution enters at Validate, which
 * routes by the durable record: same key, same attempt count, same approval and expiry.
 */
export async function resumeOperation(deps: ResumeDeps, operationId: string, onlyIfLeaseBefore?: string): Promise<boolean> {
  return (await resumeIfDue(deps, operationId, onlyIfLeaseBefore)).resumed;
}

/**
 * `resumeOperation`, also saying when a sweeper should look at the operation again: at its lease when it is
 * still leased, a minute on when it is active but could not be resumed, never when it is settled or was
 * resumed (the resuming write watches it at its new lease).
 */
async function resumeIfDue(
  deps: ResumeDeps,
  operationId: string,
  onlyIfLeaseBefore?: string,
): Promise<{ resumed: boolean; watchAgainAt?: string }> {
  const first = await deps.store.getOperation(operationId);
  if (!first) return { resumed: false };
  const claimed = await advance(deps, first, (op) => {
    if (!isActive(op) || !accepts(op, 'resume')) return { value: false };
    if (onlyIfLeaseBefore && (op.leaseUntil ?? '') >= onlyIfLeaseBefore) return { value: false };
    return { value: true, events: resumeEvents(op, deps.now()) };
  });
  if (!claimed.value) {
    const op = claimed.op;
    if (!isActive(op)) return { resumed: false };
    const lease = op.leaseUntil ?? op.updatedAt;
    const now = new Date(deps.now()).toISOString();
    return { resumed: false, watchAgainAt: lease > now ? lease : new Date(deps.now() + REWATCH_MS).toISOString() };
  }
  await deps.lifecycle
    .stop(executionNameOf({ operationId, resumes: claimed.op.resumes - 1 }), 'superseded by a resumed execution')
    .catch(() => undefined);
  await deps.lifecycle.start({ operationId, next: 'validate' }, executionNameOf(claimed.op), 'standard');
  return { resumed: true };
}

/** An active operation past its lease that could not be resumed now is looked at again this much later. */
const REWATCH_MS = 60_000;

/**
 * One sweep: resumes every operation whose lease has passed. `ignoreLeases` is for a runtime that knows
 * none of its executions survived (the embedded stack at boot): then every active operation continues.
 */
export async function sweep(deps: ResumeDeps, limit = 25, options: { ignoreLeases?: boolean } = {}): Promise<string[]> {
  // Where the store keeps a watch list, a sweep walks it as the sweeper Lambda does: it is what reaches the
  // model calls whose leases ran out (listing expired leases finds operations only).
  if (deps.store.sweepWatch && !options.ignoreLeases)
    return (await sweepPart(deps, { part: 0, parts: 1, more: () => true, concurrency: Math.min(limit, SWEEP_CONCURRENCY) })).resumed;
  const now = new Date(deps.now()).toISOString();
  const cutoff = options.ignoreLeases ? '9999-12-31T23:59:59.999Z' : now;
  const stuck = await deps.store.listExpiredLeases(now, limit, options);
  const resumed: string[] = [];
  for (const op of stuck) {
    if (await resumeOperation(deps, op.operationId, cutoff)) resumed.push(op.operationId);
  }
  return resumed;
}

/** Operations one sweeper invocation resumes at once: bounds its share of StartExecution's quota, which the API shares. */
export const SWEEP_CONCURRENCY = 8;

/**
 * One sweeper invocation's share: its part of the watch list (`part` of `parts`, each a range of shards),
 * walked while `more()` says there is time, `concurrency` operations at a time. Only the due entries are
 * read to find the work; each operation is read once, by its resumption. A store without a watch list is
 * swept whole by `sweep`.
 */
export async function sweepPart(
  deps: ResumeDeps,
  options: { part: number; parts: number; more: () => boolean; concurrency?: number },
): Promise<{ resumed: string[]; visited: number; oldestDue?: string }> {
  const now = new Date(deps.now()).toISOString();
  if (!deps.store.sweepWatch) {
    const resumed = options.part === 0 ? await sweep(deps) : [];
    return { resumed, visited: resumed.length };
  }
  const resumed: string[] = [];
  const walked = await deps.store.sweepWatch(
    { now, part: options.part, parts: options.parts, concurrency: options.concurrency ?? SWEEP_CONCURRENCY, more: options.more },
    async (operationId) => {
      // A model call's lease: charged in full once it runs out unsettled.
      if (isModelCallId(operationId)) return expireModelCallIfDue(deps, operationId, now);
      const out = await resumeIfDue(deps, operationId, now);
      if (out.resumed) resumed.push(operationId);
      return out.watchAgainAt;
    },
  );
  return { resumed, ...walked };
}
