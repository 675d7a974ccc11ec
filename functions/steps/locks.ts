import type { OperationRecord } from '../core/model';
import type { Deps, LockStore, WithStore } from '../core/ports';
import type { ToolSpec } from '../core/tool-spec';

/**
 * Locks are per operation, not per attempt: taken before the first attempt, renewed by every step that
 * continues the operation, and released only once its outcome is settled (recorded, failed, cancelled or
 * handed to a person), so a retried write can never land after a later write to the same resource.
 */
export async function lockKeyOf(
  deps: Pick<Deps, 'toolDirectory'>,
  op: Pick<OperationRecord, 'lockKey' | 'approvalLines' | 'frozenArguments'>,
  tool: ToolSpec | undefined,
): Promise<string | undefined> {
  // The key the tool's code answered at validation. An operation validated before keys were kept (an older
  // version's, still in flight across an update) asks the tool's code again: in `Tools` where it runs there.
  if (op.approvalLines !== undefined || op.lockKey !== undefined) return op.lockKey;
  if (!tool?.lockKey || !op.frozenArguments) return undefined;
  const args = JSON.parse(op.frozenArguments);
  if (!deps.toolDirectory?.hosts(tool.name)) return `${tool.name}:${tool.lockKey(args)}`;
  const check = await deps.toolDirectory.check(tool.name, args);
  return check.ok ? check.lockKey : undefined;
}

export function renewLock(
  deps: Pick<WithStore<LockStore>, 'store' | 'now'>,
  lockKey: string,
  operationId: string,
  leaseMs: number,
): Promise<boolean> {
  return deps.store.acquireLock(lockKey, operationId, leaseMs, deps.now());
}

/** An operation holds its lock while a later attempt or reconciliation may still write. */
function holdsLock(op: OperationRecord): boolean {
  if (op.state === 'executing') return true;
  return op.state === 'outcome_unknown' && !op.review?.required;
}

export async function releaseLockIfSettled(
  deps: Pick<WithStore<LockStore>, 'store'>,
  lockKey: string | undefined,
  op: OperationRecord,
): Promise<void> {
  if (lockKey && !holdsLock(op)) await deps.store.releaseLock(lockKey, op.operationId);
}
