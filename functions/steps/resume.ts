import { accepts } from '../core/transition-table';
import type { LifecycleEvent } from '../core/lifecycle-events';
import { stepLease } from '../core/leases';
import { isActive } from '../core/record-predicates';
import type { Deps } from '../core/ports';
import { advance } from './advance';
import { executionNameOf } from './deps';

/**
 * Starts a fresh execution for an operation whose own execution was lost (a crash, an expired lease,
 * a dead task token). Claiming is a conditional write, so two sweepers never resume the same one twice.
 * An attempt in flight at the crash is presumed lost (it may have reached the upstream), so the new
 * execution reconciles it instead of sending it blindly. The new execution enters at Validate, which
 * routes by the durable record: same key, same attempt count, same approval and expiry.
 */
export async function resumeOperation(deps: Deps, operationId: string, onlyIfLeaseBefore?: string): Promise<boolean> {
  const first = await deps.store.getOperation(operationId);
  if (!first) return false;
  const claimed = await advance(deps, first, (op) => {
    if (!isActive(op) || !accepts(op, 'resume')) return { value: false };
    if (onlyIfLeaseBefore && (op.leaseUntil ?? '') >= onlyIfLeaseBefore) return { value: false };
    const leaseUntil = stepLease(deps.now());
    const events: LifecycleEvent[] = accepts(op, 'lose_attempt') ? [{ type: 'lose_attempt', leaseUntil }] : [];
    return { value: true, events: [...events, { type: 'resume', leaseUntil }] };
  });
  if (!claimed.value) return false;
  await deps.lifecycle
    .stop(executionNameOf({ operationId, resumes: claimed.op.resumes - 1 }), 'superseded by a resumed execution')
    .catch(() => undefined);
  await deps.lifecycle.start({ operationId, next: 'validate' }, executionNameOf(claimed.op), 'standard');
  return true;
}

/**
 * One sweep: resumes every operation whose lease has passed. `ignoreLeases` is for a runtime that knows
 * none of its executions survived (the embedded stack at boot): then every active operation continues.
 */
export async function sweep(deps: Deps, limit = 25, options: { ignoreLeases?: boolean } = {}): Promise<string[]> {
  const now = new Date(deps.now()).toISOString();
  const cutoff = options.ignoreLeases ? '9999-12-31T23:59:59.999Z' : now;
  const stuck = await deps.store.listExpiredLeases(now, limit, options);
  const resumed: string[] = [];
  for (const op of stuck) {
    if (await resumeOperation(deps, op.operationId, cutoff)) resumed.push(op.operationId);
  }
  return resumed;
}
