import { dueEscalationStep, escalationRecipients, requestedAtOf, type EscalationStep } from '../core/escalation';
import { logOf } from '../core/log';
import type { OperationRecord } from '../core/model';
import { approvalSummary, approverArguments } from '../core/notices';
import { mayApprove } from '../core/policy';
import type { ApprovalRequest, ReviewQueries, WithStore } from '../core/ports';
import { requesterOf } from '../core/record-predicates';
import { accepts } from '../core/transition-table';
import { advance, type AdvanceDeps } from './advance';
import { approvalUrl } from './approval';

/** The store roles escalation uses: the pending approvals' index, and the operation it records each step on. */
export type EscalationDeps = AdvanceDeps & WithStore<AdvanceDeps['store'] & Pick<ReviewQueries, 'listPendingApprovals'>>;

/** Pending approvals read per page. */
const PAGE = 100;

/** One step sent: which approval, which step, to whom. */
export interface EscalationSentLine {
  operationId: string;
  step: number;
  escalated: string[];
  reminded: string[];
}

/**
 * The sweeper's pass over pending approvals (only when the config has `approvalEscalation`): each step that has
 * come due is recorded on the operation first, in a write conditional on the version read, and sent after, so two
 * sweepers (or one restarted) never send a step twice; a step due while no sweeper ran is sent at the next pass.
 */
export async function escalateWaitingApprovals(
  deps: EscalationDeps,
  options: { more?: () => boolean } = {},
): Promise<EscalationSentLine[]> {
  const config = await deps.config();
  const steps = config.approvalEscalation;
  if (!steps?.length) return [];
  const sent: EscalationSentLine[] = [];
  let after: Record<string, string> | undefined;
  do {
    const now = deps.now();
    const page = await deps.store.listPendingApprovals({
      // Every pending approval: who may decide each is the escalation's own choice (core/escalation.ts).
      approverId: null,
      now: new Date(now).toISOString(),
      limit: PAGE,
      after,
    });
    for (const op of page.items) {
      // Out of time: the rest are due still, and the next pass sends them.
      if (options.more && !options.more()) return sent;
      if (dueStep(op, steps, now) === undefined) continue;
      try {
        sent.push(...(await escalateIfDue(deps, op, steps)));
      } catch (error) {
        // One approval's failure must not hold back the others; it is looked at again at the next pass.
        logOf(deps).warn('approval escalation failed', { operationId: op.operationId, error: (error as Error).message });
      }
    }
    after = page.nextKey as Record<string, string> | undefined;
  } while (after && (options.more?.() ?? true));
  return sent;
}

function dueStep(op: OperationRecord, steps: readonly EscalationStep[], now: number): number | undefined {
  if (!op.approval || !accepts(op, 'escalate_approval')) return undefined;
  return dueEscalationStep({
    steps,
    requestedAt: requestedAtOf(op),
    now,
    sent: op.approval.escalations?.length ?? 0,
    expiresAt: op.approval.expiresAt,
  });
}

/** Sends every step of one approval that is due now, in order, each recorded before it goes out. */
async function escalateIfDue(
  deps: EscalationDeps,
  first: OperationRecord,
  steps: readonly EscalationStep[],
): Promise<EscalationSentLine[]> {
  const config = await deps.config();
  const lines: EscalationSentLine[] = [];
  let op = first;
  for (;;) {
    const claimed = await advance(deps, op, (current) => {
      const step = dueStep(current, steps, deps.now());
      if (step === undefined) return { value: undefined };
      const approvers = config.principals.filter((p) => mayApprove(p, current));
      const to = escalationRecipients(approvers, steps, step, current);
      const ids = { escalated: to.escalated.map((p) => p.id), reminded: to.reminded.map((p) => p.id) };
      return { value: { step, ...to }, events: [{ type: 'escalate_approval', step, afterMinutes: steps[step].afterMinutes, ...ids }] };
    });
    // Another sweeper recorded it first, or nothing is due: that one sends it, or there is nothing to send.
    if (!claimed.changed || !claimed.value) return lines;
    op = claimed.op;
    const { step, escalated, reminded } = claimed.value;
    const request = (kind: 'escalated' | 'reminded', to: typeof escalated): ApprovalRequest => ({
      approvalId: op.approval!.approvalId,
      operationId: op.operationId,
      runId: op.runId,
      toolName: op.toolName,
      requestedBy: requesterOf(op),
      summary: approvalSummary(op, requesterOf(op)),
      expiresAt: op.approval!.expiresAt,
      links: to.map((p) => ({ approverId: p.id, url: approvalUrl(deps, config.approvalSecret, op, p) })),
      escalation: { kind, step, afterMinutes: steps[step].afterMinutes },
      // Every request that asks a person shows the arguments; without the kept secret fields, none are sent.
      ...approverArguments(op, op.secretFields),
    });
    try {
      await Promise.all([
        escalated.length ? deps.notifier.approvalEscalated?.(request('escalated', escalated)) : undefined,
        reminded.length ? deps.notifier.approvalEscalated?.(request('reminded', reminded)) : undefined,
      ]);
    } catch (error) {
      // Recorded already: never sent again. The notifier counts and logs failed deliveries itself.
      logOf(deps).warn('approval escalation notification failed', { operationId: op.operationId, error: (error as Error).message });
    }
    lines.push({ operationId: op.operationId, step, escalated: escalated.map((p) => p.id), reminded: reminded.map((p) => p.id) });
  }
}
