import { isActive } from '../core/lifecycle';
import { executionNameOf, type Deps } from './deps';
import { mutate } from './mutate';

/**
 * Starts a fresh execution for an operation whose own execution was lost (a crash, an expired lease,
 * a dead task token). Claiming is a conditional write, so two sweepers never resume the same one twice.
 * The new execution enters at Validate, which routes by the durable record: same key, same attempt count.
 */
export async function resumeOperation(deps: Deps, operationId: string, onlyIfLeaseBefore?: string): Promise<boolean> {
  const first = await deps.store.getOperation(operationId);
  if (!first) return false;
  const { value: claimed, op } = await mutate(deps.store, first.runId, operationId, (_run, op) => {
    if (!isActive(op)) return { value: false };
    if (onlyIfLeaseBefore && (op.leaseUntil ?? '') >= onlyIfLeaseBefore) return { value: false };
    const leaseUntil = new Date(deps.now() + 60_000).toISOString();
    return { value: true, change: { op: { ...op, resumes: op.resumes + 1, leaseUntil }, events: [] } };
  });
  if (!claimed) return false;
  await deps.lifecycle.stop(executionNameOf({ operationId, resumes: op.resumes - 1 }), 'superseded by a resumed execution').catch(() => undefined);
  await deps.lifecycle.start(operationId, executionNameOf(op));
  return true;
}

/**
 * One sweep: resumes every operation whose lease has passed. `ignoreLeases` is for a runtime that knows
 * none of its executions survived (the embedded stack at boot): then every active operation continues.
 */
export async function sweep(deps: Deps, limit = 25, options: { ignoreLeases?: boolean } = {}): Promise<string[]> {
  const cutoff = options.ignoreLeases ? '9999-12-31T23:59:59.999Z' : new Date(deps.now()).toISOString();
  const stuck = await deps.store.listExpiredLeases(cutoff, limit);
  const resumed: string[] = [];
  for (const op of stuck) {
    if (await resumeOperation(deps, op.operationId, cutoff)) resumed.push(op.operationId);
  }
  return resumed;
}
