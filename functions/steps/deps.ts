import type { RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';

export type { Deps, LifecyclePort, Notifier } from '../core/ports';

/** The principal with this id in a configuration already read (one read per step, not one per lookup). */
export function principalIn(config: RunnerConfig, id: string): Principal | undefined {
  const entry = config.principals.find((p) => p.id === id);
  return entry && { id: entry.id, roles: entry.roles, tools: entry.tools };
}

/** Each resume of an operation runs as a new execution; the name says which. */
export function executionNameOf(op: { operationId: string; resumes: number }): string {
  return op.resumes === 0 ? op.operationId : `${op.operationId}-r${op.resumes}`;
}
