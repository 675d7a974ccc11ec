import { signLink } from '../core/approval-link';
import { accepts } from '../core/transition-table';
import { stepOutput, type StepOutput } from '../core/next-step';
import { ErrorNames } from '../core/errors';
import { firstApprovers } from '../core/escalation';
import { approvalIdFor } from '../core/ids';
import { approvalLease } from '../core/leases';
import { approvalSummary, approverArguments } from '../core/notices';
import type { OperationRecord, Principal } from '../core/model';
import { isTokenPrincipal, mayApprove } from '../core/policy';
import type { Deps } from '../core/ports';
import { requesterOf } from '../core/record-predicates';
import { advance, type AdvanceDeps, mustGet } from './advance';
import { logOf } from '../core/log';
import { toolsReady } from '../core/tool-spec';

const EXPIRY_TOLERANCE_MS = 1_000;

/**
 * AwaitApproval's Lambda: stores the task token server-side, records the request and tells approvers.
 * A resumed wait (after a restart) only replaces the token: no second request, notification or expiry.
 */
export async function requestApproval(deps: AdvanceDeps, operationId: string, taskToken: string): Promise<void> {
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
  // Those an `approvalEscalation` step names hear of it when their step comes (steps/escalation.ts).
  const approvers = firstApprovers(
    config.principals.filter((p) => mayApprove(p, op)),
    config.approvalEscalation,
  );
  try {
    await deps.notifier.approvalRequested({
      approvalId: op.approval!.approvalId,
      operationId,
      runId: op.runId,
      toolName: op.toolName,
      requestedBy: requester,
      summary: approvalSummary(op, requester),
      expiresAt: op.approval!.expiresAt,
      links: approvers.map((p) => ({ approverId: p.id, url: approvalUrl(deps, config.approvalSecret, op, p) })),
      ...approverArguments(op, op.secretFields ?? (await secretFieldsOf(deps, op))),
    });
  } catch (error) {
    // The request is durable and listed by GET /v1/approvals; a failed notification must not stall the wait.
    logOf(deps).warn('approval notification failed', { operationId, error: (error as Error).message });
  }
}

/**
 * The tool's `secretFields` for an operation validated before they were kept with it; undefined when they
 * cannot be learnt here (no description, or a function without the tools): the arguments are then left out
 * of the notification rather than sent unmasked.
 */
async function secretFieldsOf(deps: Pick<AdvanceDeps, 'tools' | 'log'>, op: OperationRecord): Promise<readonly string[] | undefined> {
  try {
    await toolsReady(deps.tools);
  } catch (error) {
    logOf(deps).warn('approval notification without arguments: the tools could not be described', {
      operationId: op.operationId,
      error: (error as Error).message,
    });
    return undefined;
  }
  const tool = deps.tools.get(op.toolName);
  return tool ? (tool.secretFields ?? []) : undefined;
}

/**
 * A link to the approval page, signed for one approver, valid until the approval expires. A token approver's
 * link (`oauth:<claim>`) carries its roles, since no config holds them (core/policy.ts `decidingPrincipal`).
 */
export function approvalUrl(
  deps: Pick<Deps, 'publicBaseUrl'>,
  secret: string,
  op: OperationRecord,
  approver: Pick<Principal, 'id' | 'roles'>,
): string {
  const approval = op.approval!;
  const sig = signLink(secret, {
    approvalId: approval.approvalId,
    approverId: approver.id,
    expiresAt: Date.parse(approval.expiresAt),
    inputHash: op.inputHash,
    ...(isTokenPrincipal(approver.id) ? { roles: approver.roles } : {}),
  });
  return `${deps.publicBaseUrl}/v1/approvals/${approval.approvalId}?sig=${encodeURIComponent(sig)}`;
}

/** AwaitApproval timed out: the operation ends `approval_expired` unless a decision won the race. */
export async function expireApprovalStep(deps: AdvanceDeps, operationId: string): Promise<StepOutput> {
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
export async function tellDecided(deps: Pick<Deps, 'notifier'>, op: OperationRecord): Promise<void> {
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
