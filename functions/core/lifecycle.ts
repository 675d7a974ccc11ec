import type { OperationRecord } from './model';
import { RunnerError } from './errors';

/** Lifecycle states of an operation; the README lists them and what each one guarantees. */
export const OperationState = {
  proposed: 'proposed',
  validated: 'validated',
  awaitingApproval: 'awaiting_approval',
  executing: 'executing',
  outcomeUnknown: 'outcome_unknown',
  recorded: 'recorded',
  rejected: 'rejected',
  failedPermanent: 'failed_permanent',
  budgetExhausted: 'budget_exhausted',
  cancelled: 'cancelled',
  reported: 'reported',
} as const;
export type OperationState = (typeof OperationState)[keyof typeof OperationState];

const S = OperationState;

/** Every allowed move; a transition outside this table is a bug, never written (docs/architecture.md draws it). */
export const TRANSITIONS: Record<OperationState, readonly OperationState[]> = {
  proposed: [S.validated, S.rejected, S.budgetExhausted, S.cancelled],
  validated: [S.awaitingApproval, S.executing, S.rejected, S.failedPermanent, S.budgetExhausted, S.cancelled],
  awaiting_approval: [S.executing, S.rejected, S.failedPermanent, S.budgetExhausted, S.cancelled],
  executing: [S.outcomeUnknown, S.recorded, S.failedPermanent, S.rejected, S.budgetExhausted, S.cancelled],
  outcome_unknown: [S.executing, S.recorded, S.failedPermanent],
  recorded: [S.reported],
  rejected: [S.reported],
  failed_permanent: [S.reported],
  budget_exhausted: [S.reported],
  cancelled: [S.reported],
  reported: [],
};

/** States that settle an operation; each then moves to `reported` exactly once. */
export const SETTLED: readonly OperationState[] = [S.recorded, S.rejected, S.failedPermanent, S.budgetExhausted, S.cancelled];

export class InvalidTransitionError extends RunnerError {
  override name = 'InvalidTransitionError';
  constructor(
    readonly from: OperationState,
    readonly to: OperationState,
  ) {
    super(`operation cannot move from ${from} to ${to}`);
  }
}

export function canTransition(from: OperationState, to: OperationState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function assertTransition(from: OperationState, to: OperationState): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}

/**
 * Moves an operation to `to` with `patch` applied, and the trace event that says so.
 * The store's conditional write then makes the move real only if nobody moved it first.
 */
export function moveTo(
  op: OperationRecord,
  to: OperationState,
  patch: Partial<OperationRecord>,
  detail?: Record<string, unknown>,
): { op: OperationRecord; events: import('./trace').NewTraceEvent[] } {
  const next: OperationRecord = { ...op, ...patch, state: to };
  // Staying in a state (another attempt while executing) is not a transition and emits no event.
  if (op.state === to) return { op: next, events: [] };
  assertTransition(op.state, to);
  return {
    op: next,
    events: [
      {
        type: 'state.transition',
        operationId: op.operationId,
        callId: op.callId,
        from: op.state,
        to,
        ...(next.attempts ? { attempt: next.attempts } : {}),
        ...(detail ? { detail } : {}),
      },
    ],
  };
}
