import { withClock } from '../core/budgets';
import type { Envelope } from '../core/envelope';
import { spendView } from '../core/spend';
import type { OperationRecord, RunRecord } from '../core/model';
import { requesterOf } from '../core/record-predicates';
import { redact } from '../core/redact';
import type { Deps } from '../core/ports';
import type { OperationDetails } from '../core/timeline';
import { resultValue } from './deliver';

/** The run as its owner sees it; the wall-clock budget is applied at read time. */
export function runView(run: RunRecord, now: number) {
  const clocked = withClock(run, now);
  return {
    runId: run.runId,
    status: clocked.status,
    budgets: run.budgets,
    usage: {
      turns: run.usage.turns,
      toolCalls: run.usage.toolCalls,
      ...spendView(run.usage),
      wallClockSeconds: Math.max(0, Math.round((Math.min(now, Date.parse(run.deadlineAt)) - Date.parse(run.createdAt)) / 1000)),
    },
    metadata: run.metadata,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    deadlineAt: run.deadlineAt,
  };
}

/**
 * The operation record's fields (`OperationSchema` in `schemas.ts`, documented in `docs/openapi.json`); never
 * the task token or raw arguments. `envelope` is the one the model gets (`deliveredEnvelope`); the idempotency
 * key only for those who look effects up upstream (`showIdempotencyKey`: reviewers and admins), never agents.
 */
export function operationView(op: OperationRecord, envelope: Envelope | undefined, showIdempotencyKey: boolean) {
  const outcome = op.outcome ?? (op.state === 'outcome_unknown' ? op.lastAttempt?.outcome : undefined);
  return {
    operationId: op.operationId,
    runId: op.runId,
    callId: op.callId,
    turn: op.turn,
    toolName: op.toolName,
    state: op.state,
    risk: op.risk,
    inputHash: op.inputHash,
    ...(op.policies ? { policies: op.policies } : {}),
    ...(showIdempotencyKey ? { idempotencyKey: op.idempotencyKey } : {}),
    attempts: op.attempts,
    createdAt: op.createdAt,
    updatedAt: op.updatedAt,
    approval: op.approval
      ? {
          approvalId: op.approval.approvalId,
          state: op.approval.state,
          expiresAt: op.approval.expiresAt,
          decidedBy: op.approval.decidedBy,
          decidedAt: op.approval.decidedAt,
        }
      : undefined,
    outcome: outcome
      ? { kind: outcome.kind, code: 'code' in outcome ? outcome.code : undefined, retryable: outcome.kind === 'failed_retryable' }
      : undefined,
    review: op.review,
    requestedBy: requesterOf(op),
    envelope,
    lateOutcome: op.lateOutcome
      ? { kind: op.lateOutcome.kind, code: 'code' in op.lateOutcome ? op.lateOutcome.code : undefined }
      : undefined,
  };
}

/**
 * What an owner or admin may read of an operation on the trace page: the frozen arguments and the result
 * (the recorded one, or a late one), with secret-looking values masked. Never the idempotency key or task token.
 */
export async function operationDetails(deps: Pick<Deps, 'blobs'>, op: OperationRecord): Promise<OperationDetails> {
  const result = (await resultValue(deps, op.outcome)) ?? (await resultValue(deps, op.lateOutcome));
  return {
    ...(op.frozenArguments ? { arguments: redact(JSON.parse(op.frozenArguments)) } : {}),
    ...(result !== undefined ? { result: redact(result) } : {}),
  };
}
