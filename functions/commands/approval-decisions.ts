import { verifyLink } from '../core/approval-link';
import { ErrorNames } from '../core/errors';
import { operationIdOfApproval } from '../core/ids';
import type { OperationRecord, Principal } from '../core/model';
import { stepOutput } from '../core/next-step';
import { decidingPrincipal, hasRole } from '../core/policy';
import type { OperationStore, WithStore } from '../core/ports';
import { isOwnOperation } from '../core/record-predicates';
import { accepts } from '../core/transition-table';
import { advance } from '../steps/advance';
import { tellDecided } from '../steps/approval';
import { resumeOperation, type ResumeDeps } from '../steps/resume';

/** An approver's decision, by signed link or by key (the API's commands; the wait itself is steps/approval.ts). */

export type ApprovalAccess =
  | { ok: true; op: OperationRecord; approver: Principal }
  | { ok: false; status: 403 | 404 | 409; code: 'forbidden' | 'not_found' | 'invalid_state'; message: string };

/** Checks a link: the operation exists, the signature is this operation's, the approver may approve it. */
export async function openApproval(
  deps: Pick<WithStore<OperationStore>, 'store' | 'config' | 'now'>,
  approvalId: string,
  sig: string | undefined,
): Promise<ApprovalAccess> {
  const operationId = operationIdOfApproval(approvalId);
  const op = operationId ? await deps.store.getOperation(operationId) : undefined;
  if (!op?.approval) return { ok: false, status: 404, code: 'not_found', message: 'no such approval' };
  const config = await deps.config();
  const check = verifyLink(config.approvalSecret, sig ?? '', { approvalId, inputHash: op.inputHash }, deps.now());
  if (!check.ok)
    return {
      ok: false,
      status: 403,
      code: 'forbidden',
      message: check.reason === 'expired' ? 'this approval link has expired' : 'this approval link is not valid',
    };
  // A token approver is in no config: the link carries the roles it was issued with, signed.
  const asIssued = check.roles && { roles: check.roles, tools: [] };
  return mayDecide(decidingPrincipal(config, check.approverId, asIssued), op);
}

/**
 * The rules for who decides, whether by signed link or by key: an approver (a config principal as the config
 * says now, a token principal as it authenticated or as its link says) who is neither the requester nor the
 * run's owner.
 */
export function mayDecide(approver: Principal | undefined, op: OperationRecord): ApprovalAccess {
  if (!approver || !hasRole(approver, 'approver'))
    return { ok: false, status: 403, code: 'forbidden', message: 'this approver may no longer approve' };
  if (isOwnOperation(approver.id, op))
    return { ok: false, status: 403, code: 'forbidden', message: 'the requester cannot approve its own operation' };
  return { ok: true, op, approver };
}

export type DecisionResult = { ok: true; op: OperationRecord } | Extract<ApprovalAccess, { ok: false }>;

/** A decision through a signed link: the link is checked, then the decision recorded as `decideAs` does. */
export async function decideApproval(
  deps: ResumeDeps,
  approvalId: string,
  sig: string | undefined,
  decision: 'approve' | 'reject',
  reason?: string,
): Promise<DecisionResult> {
  const access = await openApproval(deps, approvalId, sig);
  if (!access.ok) return access;
  return decideAs(deps, access, decision, reason);
}

/** Records one decision by an approver `mayDecide` admitted (a second one is refused), then returns the task token to Step Functions. */
export async function decideAs(
  deps: ResumeDeps,
  access: Extract<ApprovalAccess, { ok: true }>,
  decision: 'approve' | 'reject',
  reason?: string,
): Promise<DecisionResult> {
  const decided = await advance(deps, access.op, (op) => {
    if (!accepts(op, 'decide_approval') || deps.now() >= Date.parse(op.approval!.expiresAt))
      return { value: undefined as string | undefined };
    return { value: op.approvalTaskToken, events: [{ type: 'decide_approval', decision, by: access.approver.id, reason }] };
  });
  if (!decided.changed)
    return { ok: false, status: 409, code: 'invalid_state', message: 'this approval was already decided or has expired' };
  const op = decided.op;
  try {
    if (!decided.value) throw new Error('no task token stored');
    if (decision === 'approve') await deps.lifecycle.sendTaskSuccess(decided.value, stepOutput(op, deps.now()));
    else await deps.lifecycle.sendTaskFailure(decided.value, ErrorNames.ApprovalRejected, 'rejected by an approver');
  } catch {
    // The waiting execution is gone (a restart, a lost token): the decision is durable, so resume from it.
    await resumeOperation(deps, op.operationId);
  }
  await tellDecided(deps, op);
  return { ok: true, op };
}
