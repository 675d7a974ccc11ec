import { OperationState } from './lifecycle';
import type { OperationRecord, Outcome } from './model';
import type { ToolSpec } from './tool-spec';

/**
 * What the lifecycle reads off a record (and off a tool's registration), each decided once here: the
 * engine, the steps, the API and the stores ask these instead of re-deriving them.
 */

const S = OperationState;

/** The last attempt started has no recorded answer yet (its intent is written; its result is not). */
function lastAttemptUnanswered(op: OperationRecord): boolean {
  return op.lastAttempt?.attempt !== op.attempts;
}

/**
 * The outcome of an attempt before `attempt` is unknown, so its request may still take effect. (A record
 * written before `inDoubtSince` existed shows it by its state or its last attempt.)
 */
export function inDoubtBefore(op: OperationRecord, attempt: number): boolean {
  const legacy = op.state === S.outcomeUnknown || op.lastAttempt?.outcome.kind === 'outcome_unknown' ? 0 : undefined;
  const since = op.inDoubtSince ?? legacy;
  return since !== undefined && since < attempt;
}

/** An attempt is in flight: `executing`, and the attempt started last has not finished. */
export function attemptUnfinished(op: OperationRecord): boolean {
  return op.state === S.executing && lastAttemptUnanswered(op);
}

/**
 * An attempt was presumed lost (its worker vanished, so the operation went to outcome_unknown) and has
 * not answered since; nothing else has settled the doubt either.
 */
export function attemptPresumedLost(op: OperationRecord): boolean {
  return op.state === S.outcomeUnknown && op.attempts > 0 && lastAttemptUnanswered(op) && !op.review?.required && !op.envelope;
}

/**
 * A cancelled operation whose last attempt was sent and never answered, or one of whose attempts had an
 * unknown outcome: its effect may exist, so it stays watched (by its lease) until a late result or a
 * reconciliation settles what happened.
 */
export function lateAttemptUnsettled(op: OperationRecord): boolean {
  const mayHaveActed = lastAttemptUnanswered(op) || op.inDoubtSince !== undefined;
  return op.outcome?.kind === 'cancelled' && op.attempts > 0 && mayHaveActed && !op.lateOutcome && !op.review?.required;
}

/**
 * Active operations hold a lease and are watched by the sweeper: until the model has its envelope, and
 * after that while a cancelled attempt's late answer is still owed.
 */
export function isActive(op: OperationRecord): boolean {
  return !op.envelope || lateAttemptUnsettled(op);
}

/** An approval request is open: waiting for a person, not yet decided or expired. */
export function approvalPending(op: OperationRecord): boolean {
  return op.state === S.awaitingApproval && op.approval?.state === 'pending';
}

/** Who asked for the operation: the calling principal (older records only knew the run's owner). */
export function requesterOf(op: Pick<OperationRecord, 'requestedBy' | 'principalId'>): string {
  return op.requestedBy ?? op.principalId;
}

/** The principal asked for this operation or owns its run: it may never approve it. */
export function isOwnOperation(principalId: string, op: Pick<OperationRecord, 'requestedBy' | 'principalId'>): boolean {
  return principalId === requesterOf(op) || principalId === op.principalId;
}

/**
 * Sending an attempt again with the same key is harmless: a read, or an upstream that dedupes by key.
 * Such a tool may resend an unanswered attempt, retry a 500 and settle an unknown outcome by replay.
 */
export function replaySafe(tool: Pick<ToolSpec, 'risk' | 'supportsIdempotency'>): boolean {
  return tool.risk === 'read' || tool.supportsIdempotency;
}

/** The upstream HTTP status an outcome carries, if any. */
export function upstreamStatusOf(outcome: Outcome): number | undefined {
  return 'upstreamStatus' in outcome ? outcome.upstreamStatus : undefined;
}
