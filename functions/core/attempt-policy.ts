import { backoffSeconds } from './backoff';
import type { OperationRecord, Outcome } from './model';
import { replaySafe } from './record-predicates';
import { backoffOf, type ToolSpec } from './tool-spec';

export type AfterAttempt =
  | { next: 'record'; outcome: Outcome }
  | { next: 'retry'; delaySeconds: number; reason: string }
  | { next: 'reconcile' };

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
      return {
        next: 'record',
        outcome: {
          kind: 'failed_permanent',
          code: outcome.code,
          message: `${outcome.message}; gave up ${why}`,
          upstreamStatus: outcome.upstreamStatus,
        },
      };
    }
    default:
      return { next: 'record', outcome };
  }
}

export type ReconcilePlan = 'lookup' | 'replay' | 'review';

/** How an unknown outcome is settled, from the tool's registration alone. */
export function reconcilePlanOf(tool: ToolSpec): ReconcilePlan {
  if (tool.reconcile) return 'lookup';
  if (replaySafe(tool)) return 'replay';
  return 'review';
}

export const MAX_RECONCILE_LOOKUPS = 5;
