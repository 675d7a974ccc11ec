import { signLink, verifyLink } from '../core/approval-link';
import { ErrorNames } from '../core/errors';
import { approvalIdFor, operationIdOfApproval } from '../core/ids';
import { moveTo } from '../core/lifecycle';
import type { OperationRecord, Principal } from '../core/model';
import { hasRole } from '../core/policy';
import { recordOutcome } from '../core/settle';
import { principalIn, type Deps } from './deps';
import { mutate } from './mutate';
import { resumeOperation } from './resume';
import type { StepOutput } from './validate';

const LEASE_AFTER_EXPIRY_MS = 60_000;

/**
 * AwaitApproval's Lambda: stores the task token server-side, records the request and tells approvers.
 * Step Functions then waits until a decision sends the token back or the TTL passes.
 */
export async function requestApproval(deps: Deps, operationId: string, taskToken: string): Promise<void> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const config = await deps.config();
  const { value: requested, op } = await mutate(deps.store, first.runId, operationId, (_run, op) => {
    const now = deps.now();
    const waiting = op.state === 'validated' || (op.state === 'awaiting_approval' && op.approval?.state === 'pending');
    if (!waiting) return { value: false };
    const expiresAt = op.approval?.expiresAt ?? new Date(now + config.approvalTtlSeconds * 1000).toISOString();
    const approvalId = approvalIdFor(op.operationId);
    const moved = moveTo(op, 'awaiting_approval', {
      approval: { approvalId, state: 'pending', expiresAt },
      approvalTaskToken: taskToken,
      leaseUntil: new Date(Date.parse(expiresAt) + LEASE_AFTER_EXPIRY_MS).toISOString(),
      plan: { next: 'await_approval' },
    });
    return {
      value: true,
      change: {
        op: moved.op,
        events: [...moved.events, { type: 'approval.requested', operationId: op.operationId, callId: op.callId, detail: { approvalId, expiresAt, inputHash: op.inputHash } }],
      },
    };
  });
  if (!requested) {
    // Nothing to wait for (cancelled meanwhile, or already decided): hand the token straight back.
    const next = op.approval?.state === 'approved' && op.state === 'awaiting_approval' ? 'execute' : 'report';
    if (next === 'execute') await deps.lifecycle.sendTaskSuccess(taskToken, { operationId, next });
    else await deps.lifecycle.sendTaskFailure(taskToken, ErrorNames.OperationMoved, `operation is ${op.state}`);
    return;
  }
  const approvers = config.principals.filter((p) => p.id !== op.principalId && (p.roles.includes('approver') || p.roles.includes('admin')));
  await deps.notifier.approvalRequested({
    approvalId: op.approval!.approvalId,
    operationId,
    toolName: op.toolName,
    requestedBy: op.principalId,
    expiresAt: op.approval!.expiresAt,
    links: approvers.map((p) => ({ approverId: p.id, url: approvalUrl(deps, config.approvalSecret, op, p.id) })),
  });
}

/** A link to the approval page, signed for one approver, valid until the approval expires. */
export function approvalUrl(deps: Deps, secret: string, op: OperationRecord, approverId: string): string {
  const approval = op.approval!;
  const sig = signLink(secret, { approvalId: approval.approvalId, approverId, expiresAt: Date.parse(approval.expiresAt), inputHash: op.inputHash });
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
  if (!check.ok) return { ok: false, status: 403, code: 'forbidden', message: check.reason === 'expired' ? 'this approval link has expired' : 'this approval link is not valid' };
  const approver = principalIn(config, check.approverId);
  if (!approver || !hasRole(approver, 'approver')) return { ok: false, status: 403, code: 'forbidden', message: 'this approver may no longer approve' };
  if (approver.id === op.principalId) return { ok: false, status: 403, code: 'forbidden', message: 'the requester cannot approve its own operation' };
  return { ok: true, op, approver };
}

export type DecisionResult = { ok: true; op: OperationRecord } | Extract<ApprovalAccess, { ok: false }>;

/** Records one decision (a second one is refused), then returns the task token to Step Functions. */
export async function decideApproval(deps: Deps, approvalId: string, sig: string | undefined, decision: 'approve' | 'reject', reason?: string): Promise<DecisionResult> {
  const access = await openApproval(deps, approvalId, sig);
  if (!access.ok) return access;
  const { approver } = access;
  const { value, op } = await mutate(deps.store, access.op.runId, access.op.operationId, (_run, op) => {
    const now = deps.now();
    if (op.state !== 'awaiting_approval' || op.approval?.state !== 'pending') return { value: { token: undefined, decided: false } };
    if (now >= Date.parse(op.approval.expiresAt)) return { value: { token: undefined, decided: false } };
    const at = new Date(now).toISOString();
    const approval = { ...op.approval, state: decision === 'approve' ? ('approved' as const) : ('rejected' as const), decidedBy: approver.id, decidedAt: at, reason };
    const decided = { type: 'approval.decided' as const, operationId: op.operationId, callId: op.callId, detail: { approvalId, decision, approverId: approver.id } };
    const base = { ...op, approval, approvalTaskToken: undefined };
    if (decision === 'approve') {
      return { value: { token: op.approvalTaskToken, decided: true }, change: { op: { ...base, plan: { next: 'execute' as const } }, events: [decided] } };
    }
    const recorded = recordOutcome(base, { kind: 'rejected', code: 'approval_rejected', message: reason ? `an approver rejected the call: ${reason}` : 'an approver rejected the call' });
    return { value: { token: op.approvalTaskToken, decided: true }, change: { op: recorded.op, events: [decided, ...recorded.events] } };
  });
  if (!value.decided) return { ok: false, status: 409, code: 'invalid_state', message: 'this approval was already decided or has expired' };
  try {
    if (!value.token) throw new Error('no task token stored');
    if (decision === 'approve') await deps.lifecycle.sendTaskSuccess(value.token, { operationId: op.operationId, next: 'execute' });
    else await deps.lifecycle.sendTaskFailure(value.token, ErrorNames.ApprovalRejected, 'rejected by an approver');
  } catch {
    // The waiting execution is gone (a restart, a lost token): the decision is durable, so resume from it.
    await resumeOperation(deps, op.operationId);
  }
  return { ok: true, op };
}

/** AwaitApproval timed out: the operation ends `approval_expired` unless a decision won the race. */
export async function expireApproval(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const { value } = await mutate(deps.store, first.runId, operationId, (_run, op) => {
    if (op.state !== 'awaiting_approval' || op.approval?.state !== 'pending') {
      return { value: op.state === 'awaiting_approval' && op.approval?.state === 'approved' ? ('execute' as const) : ('report' as const) };
    }
    const base = { ...op, approval: { ...op.approval, state: 'expired' as const }, approvalTaskToken: undefined };
    const recorded = recordOutcome(base, { kind: 'rejected', code: 'approval_expired', message: 'no approver decided before the approval expired' });
    const decided = { type: 'approval.decided' as const, operationId: op.operationId, callId: op.callId, detail: { approvalId: op.approval.approvalId, decision: 'expired' } };
    return { value: 'report' as const, change: { op: recorded.op, events: [decided, ...recorded.events] } };
  });
  return { operationId, next: value };
}
