import { OperationState } from './lifecycle';
import type { LifecycleEventType } from './lifecycle-events';
import type { OperationRecord } from './model';
import { approvalPending, attemptPresumedLost, attemptUnfinished, lateAttemptUnsettled } from './record-predicates';
import { RunnerError } from './errors';

const S = OperationState;

/** May a new attempt start? Only where the lifecycle explicitly put the operation. */
export function readyToAttempt(op: OperationRecord): boolean {
  switch (op.state) {
    case S.validated:
      return !op.approvalRequired;
    case S.awaitingApproval:
      return op.approval?.state === 'approved';
    case S.executing:
      return op.plan?.next === 'retry' && !attemptUnfinished(op);
    case S.outcomeUnknown:
      return op.plan?.next === 'retry' && !op.review?.required;
    default:
      return false;
  }
}

/**
 * The complete table of (state, event) pairs the engine accepts, each with the guard on the record
 * that makes it meaningful. An event outside it is refused with InvalidEventError and never written.
 */
export const ACCEPTS: { [K in LifecycleEventType]: { states: readonly OperationState[]; guard: (op: OperationRecord) => boolean } } = {
  validate: { states: [S.proposed], guard: () => true },
  // The run's budgets refused the call at submission: it settles before it is ever validated.
  exhaust_budget: { states: [S.proposed], guard: () => true },
  request_approval: {
    states: [S.validated, S.awaitingApproval],
    guard: (op) => (op.state === S.validated ? Boolean(op.approvalRequired) : approvalPending(op)),
  },
  decide_approval: { states: [S.awaitingApproval], guard: approvalPending },
  expire_approval: { states: [S.awaitingApproval], guard: approvalPending },
  escalate_approval: { states: [S.awaitingApproval], guard: approvalPending },
  start_attempt: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
  refuse_attempt: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
  finish_attempt: {
    states: [S.executing, S.outcomeUnknown, S.cancelled, S.reported],
    // In outcome_unknown: the worker was presumed lost but answered after all; its answer settles the doubt.
    guard: (op) => attemptUnfinished(op) || attemptPresumedLost(op) || (op.outcome?.kind === 'cancelled' && !op.lateOutcome),
  },
  lose_attempt: { states: [S.executing], guard: attemptUnfinished },
  claim_attempt: { states: [S.executing], guard: attemptUnfinished },
  lock_busy: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
  defer_attempt: { states: [S.executing], guard: (op) => attemptUnfinished(op) && op.attemptClaimed === false },
  start_reconcile: {
    states: [S.outcomeUnknown, S.reported],
    guard: (op) =>
      op.state === S.reported
        ? lateAttemptUnsettled(op)
        : !op.review?.required && (op.plan?.next === 'reconcile' || op.plan?.next === 'reconcile_later'),
  },
  finish_reconcile: {
    states: [S.outcomeUnknown, S.reported],
    guard: (op) => (op.state === S.reported ? lateAttemptUnsettled(op) : !op.review?.required) && op.plan?.next === 'reconcile',
  },
  cancel: { states: [S.proposed, S.validated, S.awaitingApproval, S.executing], guard: () => true },
  // A person settles an unknown outcome, or what a cancelled call's lost attempt did (kept as late).
  resolve: {
    states: [S.outcomeUnknown, S.reported],
    guard: (op) => op.state === S.outcomeUnknown || (op.outcome?.kind === 'cancelled' && Boolean(op.review?.required)),
  },
  report: {
    states: [S.recorded, S.rejected, S.failedPermanent, S.budgetExhausted, S.cancelled, S.outcomeUnknown],
    guard: (op) => !op.envelope && (op.state !== S.outcomeUnknown || Boolean(op.review?.required)),
  },
  // Any time after the request: a message posted while a fast decision was written still gets updated.
  note_approval_messages: {
    states: [
      S.awaitingApproval,
      S.executing,
      S.outcomeUnknown,
      S.recorded,
      S.rejected,
      S.failedPermanent,
      S.budgetExhausted,
      S.cancelled,
      S.reported,
    ],
    guard: (op) => op.approval !== undefined,
  },
  resume: {
    states: [
      S.proposed,
      S.validated,
      S.awaitingApproval,
      S.executing,
      S.outcomeUnknown,
      S.recorded,
      S.rejected,
      S.failedPermanent,
      S.budgetExhausted,
      S.cancelled,
      S.reported,
    ],
    guard: (op) => !op.envelope || lateAttemptUnsettled(op),
  },
};

export class InvalidEventError extends RunnerError {
  override name = 'InvalidEventError';
  constructor(
    readonly state: OperationState,
    readonly event: LifecycleEventType,
  ) {
    super(`an operation in state ${state} does not accept ${event}`);
  }
}

export function accepts(op: OperationRecord, type: LifecycleEventType): boolean {
  const rule = ACCEPTS[type];
  return rule.states.includes(op.state) && rule.guard(op);
}
