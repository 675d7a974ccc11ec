export type { Deps, LifecyclePort, Notifier } from '../core/ports';

/** Each resume of an operation runs as a new execution; the name says which. */
export function executionNameOf(op: { operationId: string; resumes: number }): string {
  return op.resumes === 0 ? op.operationId : `${op.operationId}-r${op.resumes}`;
}
