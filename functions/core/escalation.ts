import { z } from 'zod';
import type { OperationRecord, Role } from './model';
import { isOwnOperation } from './record-predicates';

/**
 * Reminders and escalation of approvals nobody decides: the config's `approvalEscalation` steps, and the pure
 * decisions the sweeper acts on (which step is due, who hears of it). The sweeper's side is
 * steps/escalation.ts; the record keeps what was sent (`approval.escalations`), so a step is sent once.
 */

/** Steps a config may have: each one is a notification round to people. */
export const MAX_ESCALATION_STEPS = 10;

/** One step: after `afterMinutes` of waiting, `roles` and `principals` are asked too, and those asked before reminded. */
export const EscalationStepSchema = z.strictObject({
  afterMinutes: z.number().int('afterMinutes is a whole number of minutes').min(1, 'afterMinutes is at least 1'),
  roles: z.array(z.string().min(1)).min(1).max(4).optional(),
  principals: z.array(z.string().min(1)).min(1).max(100).optional(),
});
export type EscalationStep = z.infer<typeof EscalationStepSchema>;

export const ApprovalEscalationSchema = z
  .array(EscalationStepSchema)
  .max(MAX_ESCALATION_STEPS, `approvalEscalation has at most ${MAX_ESCALATION_STEPS} steps`);

/** A principal as escalation reads it from the config. */
export interface EscalationPrincipal {
  id: string;
  roles: readonly Role[];
}

const mayApproveAny = (p: EscalationPrincipal) => p.roles.includes('approver') || p.roles.includes('admin');

/** Whether a step's group includes this principal (by id, or by a role it holds; admins hold every role). */
export function inStep(step: EscalationStep, p: EscalationPrincipal): boolean {
  if (step.principals?.includes(p.id)) return true;
  return (step.roles ?? []).some((role) => p.roles.includes(role as Role) || p.roles.includes('admin'));
}

/**
 * What is wrong with the steps, each naming its entry (`approvalEscalation.<i>`); empty when they hold. The
 * config schema refuses the document with these at load.
 */
export function escalationProblems(config: {
  principals: readonly EscalationPrincipal[];
  approvalTtlSeconds: number;
  approvalEscalation?: readonly EscalationStep[];
}): { index: number; message: string }[] {
  const problems: { index: number; message: string }[] = [];
  const byId = new Map(config.principals.map((p) => [p.id, p]));
  let previous = 0;
  for (const [index, step] of (config.approvalEscalation ?? []).entries()) {
    const name = `approvalEscalation.${index} (afterMinutes ${step.afterMinutes})`;
    const say = (message: string) => problems.push({ index, message: `${name}: ${message}` });
    if (index > 0 && step.afterMinutes <= previous) say(`afterMinutes must be greater than the step before's (${previous})`);
    previous = Math.max(previous, step.afterMinutes);
    // A step at or after the expiry would never be sent: the approval has ended by then.
    if (step.afterMinutes * 60 >= config.approvalTtlSeconds)
      say(
        `afterMinutes must be below the approval TTL (approvalTtlSeconds ${config.approvalTtlSeconds}, ${config.approvalTtlSeconds / 60} minutes)`,
      );
    if (!step.roles?.length && !step.principals?.length) say('name the roles or principals to notify');
    for (const id of step.principals ?? []) {
      const principal = byId.get(id);
      if (!principal) say(`no principal has the id ${JSON.stringify(id)}`);
      else if (!mayApproveAny(principal)) say(`principal ${JSON.stringify(id)} may not approve (it needs the approver or admin role)`);
    }
    for (const role of step.roles ?? []) {
      if (role !== 'approver' && role !== 'admin') say(`the role ${JSON.stringify(role)} may not approve (approver or admin)`);
      else if (!config.principals.some((p) => p.roles.includes(role) || p.roles.includes('admin')))
        say(`no principal holds the role ${JSON.stringify(role)}`);
    }
  }
  const steps = config.approvalEscalation ?? [];
  const approvers = config.principals.filter(mayApproveAny);
  if (steps.length && approvers.length && !firstApprovers(approvers, steps).length)
    problems.push({
      index: 0,
      message:
        'approvalEscalation: every principal who may approve is kept for a later step, so nobody would be asked when an approval is requested',
    });
  return problems;
}

/** What the record keeps of one step sent. */
export interface EscalationSent {
  /** The step's index in `approvalEscalation` (from 0). */
  step: number;
  at: string;
  /** Asked for the first time at this step. */
  escalated: string[];
  /** Asked before, reminded at this step. */
  reminded: string[];
}

/** When the approval was requested; records written before it was kept count from the operation's creation. */
export function requestedAtOf(op: Pick<OperationRecord, 'approval' | 'createdAt'>): string {
  return op.approval?.requestedAt ?? op.createdAt;
}

/**
 * The step due now, if any: the first step not yet sent, when its time has come. Steps are sent in order, one
 * at a time; a sweeper that was away sends the overdue ones one after another, none skipped.
 */
export function dueEscalationStep(input: {
  steps: readonly Pick<EscalationStep, 'afterMinutes'>[];
  requestedAt: string;
  now: number;
  sent: number;
  expiresAt?: string;
}): number | undefined {
  const { steps, requestedAt, now, sent, expiresAt } = input;
  if (sent >= steps.length) return undefined;
  if (expiresAt !== undefined && now >= Date.parse(expiresAt)) return undefined;
  return now >= Date.parse(requestedAt) + steps[sent].afterMinutes * 60_000 ? sent : undefined;
}

/** When the next step comes due (for the sweeper's schedule), if one is left. */
export function nextEscalationAt(
  steps: readonly Pick<EscalationStep, 'afterMinutes'>[],
  requestedAt: string,
  sent: number,
): string | undefined {
  const step = steps[sent];
  return step ? new Date(Date.parse(requestedAt) + step.afterMinutes * 60_000).toISOString() : undefined;
}

/**
 * Who is asked when the approval is requested: every principal who may approve, except those kept for a later
 * step (they hear of it when their step comes). Never the requester or the run's owner (`mayApprove`).
 */
export function firstApprovers<P extends EscalationPrincipal>(approvers: readonly P[], steps: readonly EscalationStep[] = []): P[] {
  return approvers.filter((p) => !steps.some((step) => inStep(step, p)));
}

/**
 * Who hears of step `index`: its group, asked for the first time (`escalated`), and everyone asked before it,
 * reminded (`reminded`). `approvers` are those who may decide this operation; the requester and the run's owner
 * are dropped again here, whatever the config says.
 */
export function escalationRecipients<P extends EscalationPrincipal>(
  approvers: readonly P[],
  steps: readonly EscalationStep[],
  index: number,
  op: Pick<OperationRecord, 'requestedBy' | 'principalId'>,
): { escalated: P[]; reminded: P[] } {
  const eligible = approvers.filter((p) => !isOwnOperation(p.id, op));
  const earlier = (p: P) => firstApprovers([p], steps).length === 1 || steps.slice(0, index).some((step) => inStep(step, p));
  const reminded = eligible.filter(earlier);
  const escalated = eligible.filter((p) => !earlier(p) && inStep(steps[index], p));
  return { escalated, reminded };
}
