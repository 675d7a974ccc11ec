import { envelopeFor } from './envelope';
import { startAttempt, claimAttempt, refuseAttempt, finishAttempt, loseAttempt, lockBusy, deferAttempt } from './attempt-transitions';
import { stepLease } from './leases';
import { moveTo, OperationState } from './lifecycle';
import {
  type Context,
  type EventOf,
  type Handler,
  type LifecycleEvent,
  type LifecycleEventType,
  noEvents,
  type Transition,
  type Validation,
} from './lifecycle-events';
import { type ApprovalInfo, type OperationRecord, type Outcome, SCHEMA_VERSION } from './model';
import { envelopeOf } from './next-step';
import { finishReconcile, startReconcile } from './reconcile-transitions';
import { lateAttemptUnsettled, requesterOf } from './record-predicates';
import { recordLate, recordOutcome } from './settle';
import type { NewTraceEvent } from './trace';
import { accepts, InvalidEventError } from './transition-table';

/**
 * The lifecycle engine: one pure function from (record, event, now) to the next record and its trace
 * events. Which events each state accepts is core/transition-table.ts; the attempt and reconciliation
 * handlers live in core/attempt-transitions.ts and core/reconcile-transitions.ts, where the lifecycle goes
 * next in core/next-step.ts. Steps do the I/O (tool calls, lookups, Step Functions) and describe what they learned as an
 * event; this module alone decides what that means for the record. Nothing else changes an operation:
 * a submission's first record comes from `propose`, every later one from `transition`.
 *
 * What happens when… (the handler below ← the step that sends its event):
 * - a call is submitted: `propose`, then `validate` (a denial also `report`s at once; a replay-safe tool's
 *   first attempt `startAttempt`s in the same write), or `exhaustBudget` and `report` when the run's
 *   budgets refuse it ← commands/submit.ts.
 * - an approval is requested, decided or expires: `requestApproval`, `decideApproval`, `expireApproval`
 *   ← steps/approval.ts (the wait) and commands/approval-decisions.ts (a person's decision).
 * - an attempt is about to start: `startAttempt`; `refuseAttempt` when authorization, the run or the
 *   deadline stop it; `lockBusy` when another operation holds the tool's lock ← steps/execute.ts.
 * - an attempt finishes: `finishAttempt`, with what core/attempt-protocol.ts decided from its outcome:
 *   record it, retry after a backoff, or reconcile ← steps/execute.ts.
 * - a write times out (or fails after it may have been sent): core/classify.ts calls it outcome_unknown,
 *   so `finishAttempt` moves it to outcome_unknown to reconcile; then `startReconcile` and
 *   `finishReconcile` (a status lookup, a replay with the same key, or a person) ← steps/reconcile.ts.
 * - an attempt is lost (its worker vanished after the intent write): `loseAttempt` (outcome_unknown,
 *   reconciled as above) ← steps/resume.ts (the sweeper), steps/reconcile.ts, steps/execute.ts.
 * - a cancel arrives: `cancel` settles and reports at once ← commands/cancel.ts. An attempt still in flight
 *   keeps its lease: its answer is `finishAttempt`'s late branch (kept, never reported); if it never
 *   answers, the sweeper resumes it and `finishReconcile` → `settleLateAttempt` records what happened.
 * - a person resolves an unknown outcome: `resolve` ← commands/cancel.ts.
 * - an outcome is settled: `report`, in the same write ← steps/advance.ts (and steps/report.ts).
 * - an execution is lost: `resume` (after `loseAttempt` if an attempt was in flight) ← steps/resume.ts.
 */

const S = OperationState;

/** What a new operation is made of; everything else starts where the lifecycle starts. */
export type Proposal = Pick<
  OperationRecord,
  | 'operationId'
  | 'runId'
  | 'callId'
  | 'turn'
  | 'toolName'
  | 'principalId'
  | 'inputHash'
  | 'idempotencyKey'
  | 'expiresAtEpoch'
  | 'traceparent'
> & { requestedBy: string; rawArguments: string };

/** The first record of an operation: `proposed`, leased for its submission, with `operation.proposed`. */
export function propose(p: Proposal, now: number): Transition {
  const at = new Date(now).toISOString();
  const { traceparent, ...fields } = p;
  const op: OperationRecord = {
    schemaVersion: SCHEMA_VERSION,
    ...fields,
    state: S.proposed,
    attempts: 0,
    createdAt: at,
    updatedAt: at,
    version: 0,
    leaseUntil: stepLease(now),
    resumes: 0,
    ...(traceparent ? { traceparent } : {}),
  };
  const proposed: NewTraceEvent = {
    type: 'operation.proposed',
    operationId: p.operationId,
    callId: p.callId,
    to: S.proposed,
    detail: { toolName: p.toolName, turn: p.turn, inputHash: p.inputHash, requestedBy: p.requestedBy },
  };
  return { op, events: [proposed] };
}

const validate: Handler<'validate'> = (op, event, { ids }) => {
  const v = event.validation;
  const decided: NewTraceEvent[] = [{ type: 'policy.decision', ...ids, detail: v.detail }];
  // Log-only policies decide nothing; the trace says what they would have decided, beside what was enforced.
  if (v.shadow) decided.push({ type: 'policy.shadow', ...ids, detail: { ...v.shadow, enforced: enforcedDecision(v) } });
  if (v.decision === 'deny') {
    const settled = recordOutcome(v.policies ? { ...op, policies: v.policies } : op, v.outcome);
    return { op: settled.op, events: [...decided, ...settled.events] };
  }
  const moved = moveTo(op, S.validated, {
    risk: v.risk,
    // The record keeps its arguments once: the frozen ones from here on (inputHash names what was sent).
    rawArguments: undefined,
    frozenArguments: v.frozenArguments,
    costCents: v.costCents,
    approvalRequired: v.approvalRequired,
    deadlineAt: v.deadlineAt,
    // The tool's answers at validation: nothing later asks its code again (locks, the approval page).
    ...(v.lockKey === undefined ? {} : { lockKey: v.lockKey }),
    ...(v.approvalLines === undefined ? {} : { approvalLines: v.approvalLines }),
    ...(v.secretFields === undefined ? {} : { secretFields: v.secretFields }),
    leaseUntil: event.leaseUntil,
    plan: { next: v.approvalRequired ? 'await_approval' : 'execute' },
    ...(v.policies ? { policies: v.policies } : {}),
  });
  return { op: moved.op, events: [...decided, ...moved.events] };
};

function enforcedDecision(v: Validation): 'allow' | 'deny' | 'require_approval' {
  if (v.decision === 'deny') return 'deny';
  return v.approvalRequired ? 'require_approval' : 'allow';
}

const exhaustBudget: Handler<'exhaust_budget'> = (op, event) =>
  recordOutcome(op, { kind: 'budget_exhausted', code: event.code ?? 'budget_exhausted', message: event.message });

const requestApproval: Handler<'request_approval'> = (op, event, { ids, at }) => {
  if (op.state === S.awaitingApproval) {
    // A resumed wait: only the token changes; the request, its expiry and its notification stay as they were.
    return noEvents({ ...op, approvalTaskToken: event.taskToken, leaseUntil: event.leaseUntil });
  }
  const approval: ApprovalInfo = { approvalId: event.approvalId, state: 'pending', expiresAt: event.expiresAt, requestedAt: at };
  const moved = moveTo(op, S.awaitingApproval, {
    approval,
    approvalTaskToken: event.taskToken,
    leaseUntil: event.leaseUntil,
    plan: { next: 'await_approval' },
  });
  const requested: NewTraceEvent = {
    type: 'approval.requested',
    ...ids,
    detail: { approvalId: event.approvalId, expiresAt: event.expiresAt, inputHash: op.inputHash, requestedBy: requesterOf(op) },
  };
  return { op: moved.op, events: [...moved.events, requested] };
};

const decideApproval: Handler<'decide_approval'> = (op, event, { ids, at }) => {
  const approval: ApprovalInfo = {
    ...op.approval!,
    state: event.decision === 'approve' ? 'approved' : 'rejected',
    decidedBy: event.by,
    decidedAt: at,
    reason: event.reason,
  };
  const decided: NewTraceEvent = {
    type: 'approval.decided',
    ...ids,
    detail: {
      approvalId: approval.approvalId,
      decision: event.decision,
      approverId: event.by,
      ...(event.reason ? { reason: event.reason } : {}),
    },
  };
  const base = { ...op, approval, approvalTaskToken: undefined };
  if (event.decision === 'approve') return { op: { ...base, plan: { next: 'execute' } }, events: [decided] };
  const message = event.reason ? `an approver rejected the call: ${event.reason}` : 'an approver rejected the call';
  const settled = recordOutcome(base, { kind: 'rejected', code: 'approval_rejected', message });
  return { op: settled.op, events: [decided, ...settled.events] };
};

const expireApproval: Handler<'expire_approval'> = (op, _event, { ids }) => {
  const base = { ...op, approval: { ...op.approval!, state: 'expired' as const }, approvalTaskToken: undefined };
  const settled = recordOutcome(base, {
    kind: 'rejected',
    code: 'approval_expired',
    message: 'no approver decided before the approval expired',
  });
  const decided: NewTraceEvent = {
    type: 'approval.decided',
    ...ids,
    detail: { approvalId: op.approval!.approvalId, decision: 'expired' },
  };
  return { op: settled.op, events: [decided, ...settled.events] };
};

/** A step of `approvalEscalation` goes out: the record keeps it (so it is sent once), the trace says to whom. */
const escalateApproval: Handler<'escalate_approval'> = (op, event, { ids, at }) => {
  const approval = op.approval!;
  if ((approval.escalations?.length ?? 0) !== event.step) return noEvents(op);
  const sent = { step: event.step, at, escalated: event.escalated, reminded: event.reminded };
  const detail = { approvalId: approval.approvalId, step: event.step, afterMinutes: event.afterMinutes };
  const events: NewTraceEvent[] = [];
  if (event.escalated.length) events.push({ type: 'approval.escalated', ...ids, detail: { ...detail, recipients: event.escalated } });
  if (event.reminded.length) events.push({ type: 'approval.reminded', ...ids, detail: { ...detail, recipients: event.reminded } });
  return { op: { ...op, approval: { ...approval, escalations: [...(approval.escalations ?? []), sent] } }, events };
};

const cancel: Handler<'cancel'> = (op, event) => {
  const outcome = { kind: 'cancelled', code: 'cancelled', message: event.reason } as const;
  const settled = recordOutcome({ ...op, approvalTaskToken: undefined }, outcome);
  const reported = reportTransition(settled.op, envelopeFor(op, outcome));
  // An attempt in flight keeps its lease: if its answer never comes, the sweeper reconciles it.
  const watched = lateAttemptUnsettled(reported.op) ? { ...reported.op, leaseUntil: op.leaseUntil } : reported.op;
  return { op: watched, events: [...settled.events, ...reported.events] };
};

const resolve: Handler<'resolve'> = (op, event, { ids }) => {
  const resolved: NewTraceEvent = {
    type: 'reconcile.finished',
    ...ids,
    detail: { result: 'resolved_by_reviewer', verdict: event.verdict, reviewerId: event.by, note: event.note },
  };
  const review = { required: false, reason: op.review?.reason ?? 'resolved by a reviewer', resolvedBy: event.by, note: event.note };
  if (op.state === S.reported) {
    const late: Outcome =
      event.verdict === 'succeeded'
        ? { kind: 'succeeded', result: undefined }
        : { kind: 'failed_permanent', code: 'permanent_failure', message: 'a reviewer confirmed the cancelled attempt had no effect' };
    const recorded = recordLate({ ...op, review }, late, op.attempts);
    return { op: recorded.op, events: [resolved, ...recorded.events] };
  }
  const outcome: Outcome =
    event.verdict === 'succeeded'
      ? { kind: 'succeeded', result: undefined }
      : { kind: 'failed_permanent', code: 'permanent_failure', message: 'a reviewer confirmed the call did not take effect' };
  const settled = recordOutcome({ ...op, review, envelope: undefined }, outcome, { resolvedBy: event.by });
  const envelope = {
    ...envelopeFor(op, outcome),
    ...(event.verdict === 'succeeded' ? { message: 'a reviewer confirmed the call succeeded' } : {}),
  };
  const reported = reportTransition(settled.op, envelope);
  return { op: reported.op, events: [resolved, ...settled.events, ...reported.events] };
};

const report: Handler<'report'> = (op, _event, { ids }) => {
  const envelope = envelopeOf(op)!;
  if (op.state === S.outcomeUnknown) {
    return {
      op: { ...op, envelope, plan: { next: 'done' } },
      events: [{ type: 'result.reported', ...ids, detail: { status: envelope.status, review: 'required' } }],
    };
  }
  return reportTransition(op, envelope);
};

const noteApprovalMessages: Handler<'note_approval_messages'> = (op, event) => {
  const known = op.approval!.slackMessages ?? [];
  const added = event.messages.filter((m) => !known.some((k) => k.channel === m.channel && k.ts === m.ts));
  return noEvents({ ...op, approval: { ...op.approval!, slackMessages: [...known, ...added] } });
};

const resume: Handler<'resume'> = (op, event) => noEvents({ ...op, resumes: op.resumes + 1, leaseUntil: event.leaseUntil });

/** One handler per event: the mapped type makes the compiler refuse a table that misses one. */
const HANDLERS: { [K in LifecycleEventType]: Handler<K> } = {
  validate,
  exhaust_budget: exhaustBudget,
  request_approval: requestApproval,
  decide_approval: decideApproval,
  expire_approval: expireApproval,
  note_approval_messages: noteApprovalMessages,
  escalate_approval: escalateApproval,
  start_attempt: startAttempt,
  refuse_attempt: refuseAttempt,
  finish_attempt: finishAttempt,
  lose_attempt: loseAttempt,
  claim_attempt: claimAttempt,
  lock_busy: lockBusy,
  defer_attempt: deferAttempt,
  start_reconcile: startReconcile,
  finish_reconcile: finishReconcile,
  cancel,
  resolve,
  report,
  resume,
};

/** Applies one event; throws InvalidEventError outside the table. */
export function transition(op: OperationRecord, event: LifecycleEvent, now: number): Transition {
  if (!accepts(op, event.type)) throw new InvalidEventError(op.state, event.type);
  return handle(op, event, { now, at: new Date(now).toISOString(), ids: { operationId: op.operationId, callId: op.callId } });
}

function handle<K extends LifecycleEventType>(op: OperationRecord, event: EventOf<K>, ctx: Context): Transition {
  // The handler of the event's own type: the table is indexed by the type the event carries.
  const handler: Handler<K> = HANDLERS[event.type as K];
  return handler(op, event, ctx);
}

function reportTransition(op: OperationRecord, envelope: NonNullable<OperationRecord['envelope']>): Transition {
  const moved = moveTo(op, S.reported, { envelope, plan: { next: 'done' }, leaseUntil: undefined });
  return {
    op: moved.op,
    events: [
      ...moved.events,
      { type: 'result.reported', operationId: op.operationId, callId: op.callId, detail: { status: envelope.status } },
    ],
  };
}

/** Applies several events in order, as one change (for example validate, then start the first attempt). */
export function transitionAll(op: OperationRecord, events: LifecycleEvent[], now: number): Transition {
  let current: Transition = { op, events: [] };
  for (const event of events) {
    const next = transition(current.op, event, now);
    current = { op: next.op, events: [...current.events, ...next.events] };
  }
  return current;
}
