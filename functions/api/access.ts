import type { OperationRecord, Principal, Role, RunRecord } from '../core/model';
import { hasRole } from '../core/policy';
import { ApiError } from './api-error';
import { pathId } from './request-input';
import type { RouteCall } from './route-call';

/** A `caller` route's check (`route-table.ts`): one of its roles (admins hold every role), before anything is read. */
export function requireRoles(principal: Principal, roles: Role[]): void {
  if (roles.some((role) => hasRole(principal, role))) return;
  const needed = roles.length === 1 ? roles[0] : `${roles.join(', ')} or admin`;
  throw new ApiError(403, 'forbidden', `this route needs the ${needed} role`);
}

/** Owners and admins see their records; reviewers too where the route's roles include them. */
function assertVisible(call: RouteCall<unknown>, ownerId: string, what: string): void {
  const principal = call.c.get('principal');
  const allowReviewer = call.roles.includes('reviewer');
  if (ownerId === principal.id || hasRole(principal, 'admin') || (allowReviewer && hasRole(principal, 'reviewer'))) return;
  throw new ApiError(403, 'forbidden', `this ${what} belongs to another principal`);
}

/** The run the path names, as the caller may see it. `recent`: a run this process remembers will do (only for admitting a call: see steps/recent-runs.ts). */
export async function ownRun(call: RouteCall<unknown>, options: { recent?: boolean } = {}): Promise<RunRecord> {
  const { deps, c } = call;
  const runId = pathId(c, 'runId', 'run');
  const run = (options.recent ? deps.recentRuns?.get(runId) : undefined) ?? (await deps.store.getRun(runId));
  if (!run) throw new ApiError(404, 'not_found', 'no such run');
  assertVisible(call, run.principalId, 'run');
  return run;
}

/** The operation the path names, as the caller may see it. */
export async function visibleOperation(call: RouteCall<unknown>): Promise<OperationRecord> {
  const op = await call.deps.store.getOperation(pathId(call.c, 'operationId', 'operation'));
  if (!op) throw new ApiError(404, 'not_found', 'no such operation');
  assertVisible(call, op.principalId, 'operation');
  return op;
}
