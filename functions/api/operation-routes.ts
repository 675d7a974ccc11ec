import type { OperationRecord } from '../core/model';
import { hasRole } from '../core/policy';
import { decideAs, mayDecide } from '../commands/approval-decisions';
import { cancelOperation, resolveOperation } from '../commands/cancel';
import { resumeOperation } from '../steps/resume';
import { visibleOperation } from './access';
import { ApiError } from './api-error';
import { deliveredEnvelope } from './deliver';
import { pathId } from './request-input';
import type { RouteCall, RouteHandlers } from './route-call';
import { operationView } from './views';

/** The operation as this caller may see it: with the envelope the model gets; the idempotency key for reviewers and admins. */
async function operationAnswer({ c, deps }: RouteCall<unknown>, op: OperationRecord) {
  return operationView(op, await deliveredEnvelope(deps, op), hasRole(c.get('principal'), 'reviewer'));
}

/** One operation: read, cancel, resume, decide its approval, settle an unknown outcome. */
export const operationHandlers = {
  getOperation: async (call) => call.c.json(await operationAnswer(call, await visibleOperation(call))),

  cancelOperation: async (call) => {
    const op = await visibleOperation(call);
    const result = await cancelOperation(call.deps, op);
    if (!result.ok) throw new ApiError(409, 'invalid_state', `an operation in state ${result.op.state} cannot be cancelled`);
    return call.c.json(await operationAnswer(call, result.op));
  },

  // An operator's nudge: the sweeper's resume for one operation now (a fresh execution from the durable record;
  // an attempt that was in flight is presumed lost and reconciled, never sent again blindly).
  resumeOperation: async ({ c, deps }) => {
    const op = await deps.store.getOperation(pathId(c, 'operationId', 'operation'));
    if (!op) throw new ApiError(404, 'not_found', 'no such operation');
    if (!(await resumeOperation(deps, op.operationId)))
      throw new ApiError(409, 'invalid_state', `an operation in state ${op.state} is not active: there is nothing to resume`);
    const now = await deps.store.getOperation(op.operationId);
    return c.json({ operationId: op.operationId, state: now?.state ?? op.state, resumes: now?.resumes ?? op.resumes }, 202);
  },

  // The signed link's decision, made with an approver's key (the people's console, scripts): the same rules.
  decideApproval: async ({ c, deps, body }) => {
    const input = await body();
    const op = await deps.store.getOperation(pathId(c, 'operationId', 'operation'));
    if (!op) throw new ApiError(404, 'not_found', 'no such operation');
    if (!op.approval) throw new ApiError(409, 'invalid_state', 'this operation has no approval to decide');
    const access = mayDecide(c.get('principal'), op);
    const result = access.ok ? await decideAs(deps, access, input.decision, input.reason) : access;
    if (!result.ok) throw new ApiError(result.status, result.code, result.message);
    return c.json({ approvalId: op.approval.approvalId, operationId: op.operationId, state: result.op.approval?.state ?? 'pending' });
  },

  resolveOperation: async (call) => {
    const input = await call.body();
    const op = await visibleOperation(call);
    const result = await resolveOperation(call.deps, op, call.c.get('principal'), input.outcome, input.note);
    if (!result.ok)
      throw new ApiError(409, 'invalid_state', `only an outcome_unknown operation can be resolved; this one is ${result.op.state}`);
    return call.c.json(await operationAnswer(call, result.op));
  },
} satisfies Partial<RouteHandlers>;
