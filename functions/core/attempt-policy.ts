import { backoffSeconds } from './backoff';
import type { Failure, OperationRecord, Outcome } from './model';
import { replaySafe, inDoubtBefore } from './record-predicates';
import { backoffOf, type ToolSpec } from './tool-spec';

export type AfterAttempt =
  | { next: 'record'; outcome: Outcome }
  | { next: 'retry'; delaySeconds: number; reason: string }
  | { next: 'reconcile' }
  /** A failure while an earlier attempt may still take effect: settled by a status lookup, or by a person. */
  | { next: 'confirm'; outcome: Failure; by: DoubtSettlement };

/**
 * The retry decision, made once, here: retry a retryable failure only while the tool's maxAttempts and the
 * operation's deadline allow; an unknown outcome is never retried blindly, it goes to reconciliation.
 */
export function decideAfterAttempt(tool: ToolSpec, op: OperationRecord, outcome: Outcome, now: number, random: () => number): AfterAttempt {
  switch (outcome.kind) {
    case 'outcome_unknown':
      return { next: 'reconcile' };
    case 'failed_retryable': {
      const delaySeconds = backoffSeconds(op.attempts + 1, backoffOf(tool), random, outcome.retryAfterSeconds);
      const fits = !op.deadlineAt || now + delaySeconds * 1000 + tool.timeoutMs <= Date.parse(op.deadlineAt);
      if (op.attempts < tool.maxAttempts && fits) return { next: 'retry', delaySeconds, reason: outcome.code };
      const why = op.attempts >= tool.maxAttempts ? `after ${op.attempts} attempt(s)` : 'before the operation deadline';
      return failure(tool, op, {
        kind: 'failed_permanent',
        code: outcome.code,
        message: `${outcome.message}; gave up ${why}`,
        upstreamStatus: outcome.upstreamStatus,
      });
    }
    case 'failed_permanent':
      return failure(tool, op, outcome);
    default:
      return { next: 'record', outcome };
  }
}

function failure(tool: ToolSpec, op: OperationRecord, outcome: Failure): AfterAttempt {
  const by = settleFailureBy(tool, op, op.attempts);
  return by ? { next: 'confirm', outcome, by } : { next: 'record', outcome };
}

export type DoubtSettlement = 'lookup' | 'review';

/**
 * How a failure of attempt `attempt` (or a refusal to start it) is settled when an earlier attempt went
 * unanswered and may still take effect: a status lookup confirms that nothing did, or, without one, a
 * person decides. Undefined when there is no such doubt, or for a read, which has no effect to doubt.
 */
export function settleFailureBy(
  tool: Pick<ToolSpec, 'reconcile' | 'risk'> | undefined,
  op: OperationRecord,
  attempt: number,
): DoubtSettlement | undefined {
  if (!inDoubtBefore(op, attempt) || (tool?.risk ?? op.risk) === 'read') return undefined;
  return tool?.reconcile ? 'lookup' : 'review';
}

export type ReconcilePlan = 'lookup' | 'replay' | 'review';

/** How an unknown outcome is settled, from the tool's registration alone. */
export function reconcilePlanOf(tool: ToolSpec): ReconcilePlan {
  if (tool.reconcile) return 'lookup';
  if (replaySafe(tool)) return 'replay';
  return 'review';
}

/**
 * Status lookups that may fail (a 503, a timeout, a reset) before a person is asked. With the default
 * backoff (full jitter, capped at 20 s) ten span about a minute, so a burst of upstream trouble or a
 * restart of the runner is ridden out by the lookup, not handed to a person.
 */
export const MAX_RECONCILE_LOOKUPS = 10;
