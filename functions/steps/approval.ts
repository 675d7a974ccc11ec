import { signLink, verifyLink } from '../core/approval-link';
import { accepts, stepOutput, type StepOutput } from '../core/engine';
import { ErrorNames } from '../core/errors';
import { approvalIdFor, operationIdOfApproval } from '../core/ids';
import { approvalLease } from '../core/leases';
import { approvalSummary } from '../core/notices';
import type { OperationRecord, Principal } from '../core/model';
import { hasRole, mayApprove, principalIn } from '../core/policy';
import type { Deps } from '../core/ports';
import { isOwnOperation, requesterOf } from '../core/record-predicates';
import { advance, mustGet } from './advance';
import { resumeOperation } from './resume';

const EXPIRY_TOLERANCE_MS = 1_000;

/**
 * AwaitApproval's Lambda: stores the task token server-side, records the request and tells approvers.
 * A resumed wait (after a restart) only replaces the token: no second request, notification or expiry.
 */
export async function requestApproval(deps: Deps, operationId: string, taskToken: string): Promise<void> {
  const first = await mustGet(deps, operationId);
  const config = await deps.config();
  const requested = await advance(deps, first, (op) => {
    if (!accepts(op, 'request_approval')) return { value: false };
    const expiresAt = op.approval?.expiresAt ?? new Date(deps.now() + config.approvalTtlSeconds * 1000).toISOString();
    return {
      value: op.state === 'validated',
      events: [
        { type: 'request_approval', approvalId: approvalIdFor(op.operationId), expiresAt, taskToken, leaseUntil: approvalLease(expiresAt) },
      ],
    };
  });
  const op = requested.op;
  if (!requested.changed) {
    // Nothing to wait for (decided, cancelled or handled meanwhile): hand the token straight back.
    if (op.state === 'awaiting_approval' && op.approval?.state === 'approved')
      await deps.lifecycle.sendTaskSuccess(taskToken, stepOutput(op, deps.now()));
    else await deps.lifecycle.sendTaskFailure(taskToken, ErrorNames.OperationMoved, `operation is ${op.state}`);
    return;
  }
  if (!requested.value) return;
  const requester = requesterOf(op);
  const approvers = config.principals.filter((p) => mayApprove(p, op));
  try {
    await deps.notifier.approvalRequested({
      approvalId: op.approval!.approvalId,
      operationId,
      runId: op.runId,
      toolName: op.toolName,
      requestedBy: requester,
      summary: approvalSummary(op, requester),
      expiresAt: op.approval!.expiresAt,
      links: approvers.map((p) => ({ approverId: p.id, url: approvalUrl(deps, config.approvalSecret, op, p.id) })),
    });
  } catch (error) {
    // The request is durable and listed by GET /v1/approvals; a failed notification must not stall the wait.
    console.error(JSON.stringify({ level: 'warn', message: 'approval notification failed', operationId, error: (error as Error).message }));
  }
}

/** A link to the approval page, signed for one approver, valid until the approval expires. */
export function approvalUrl(deps: Deps, secret: string, op: OperationRecord, approverId: string): string {
  const approval = op.approval!;
  const sig = signLink(secret, {
    approvalId: approval.approvalId,
    approverId,
    expiresAt: Date.parse(approval.expiresAt),
    inputHash: op.inputHash,
  });
  return `${deps.publicBaseUrl}/v1/approvals/${approval.approvalId}?sig=${encodeURIComponent(sig)}`;
}

export type ApprovalAccess =
  | { ok: true; op: OperationRecord; approver: Principal }
  | { ok: false; status: 403 | 404 | 409; code: 'forbidden' | 'not_found' | 'invalid_state'; message: string };

/** Checks a link: the operation exists, the signature is this operation's, the approver may approve it. */
export async function openApproval(deps: Deps, approvalId: string, sig: string | undefined): Promise<ApprovalAccess> {
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
  return mayDecide(principalIn(config, check.approverId), op);
}

/**
 * The rules for who decides, whether by signed link or by key: an approver (as the config says now) who is
 * neither the requester nor the run's owner.
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
  deps: Deps,
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
  deps: Deps,
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

/** AwaitApproval timed out: the operation ends `approval_expired` unless a decision won the race. */
export async function expireApprovalStep(deps: Deps, operationId: string): Promise<StepOutput> {
  // A wait that ended early (a timer rounded down, a clock ahead) goes back to waiting: Route sends it on.
  const due = (op: OperationRecord) => deps.now() >= Date.parse(op.approval!.expiresAt) - EXPIRY_TOLERANCE_MS;
  const out = await advance(deps, operationId, (op) => ({
    value: undefined,
    events: accepts(op, 'expire_approval') && due(op) ? [{ type: 'expire_approval' }] : [],
  }));
  if (out.changed && out.op.approval?.state === 'expired') await tellDecided(deps, out.op);
  return stepOutput(out.op, deps.now());
}

/** A link-free notice that an approval ended; the notifier counts and logs a failed delivery itself. */
async function tellDecided(deps: Deps, op: OperationRecord): Promise<void> {
  const approval = op.approval;
  if (!approval || approval.state === 'pending') return;
  await deps.notifier.approvalDecided?.({
    approvalId: approval.approvalId,
    operationId: op.operationId,
    runId: op.runId,
    toolName: op.toolName,
    decision: approval.state,
    decidedBy: approval.decidedBy,
  });
}
