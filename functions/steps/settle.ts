import { envelopeFor } from '../core/envelope';
import { moveTo, resumeStep, SETTLED } from '../core/lifecycle';
import type { NextStep } from '../core/model';
import { recordLate, recordOutcome } from '../core/settle';
import type { Deps } from './deps';
import { mutate } from './mutate';
import type { StepOutput } from './validate';

/** Record's Lambda: the pending authoritative outcome becomes the operation's outcome. */
export async function recordOperation(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const { value } = await mutate(deps.store, first.runId, operationId, (_run, op) => {
    if (!op.pending) {
      const step = resumeStep(op);
      return { value: (step === 'validate' ? 'report' : step) as NextStep };
    }
    if (op.outcome?.kind === 'cancelled') {
      const late = recordLate({ ...op, pending: undefined }, op.pending, op.attempts);
      return { value: 'done' as NextStep, change: { op: late.op, events: late.events } };
    }
    const recorded = recordOutcome(op, op.pending);
    return { value: 'report' as NextStep, change: { op: recorded.op, events: recorded.events } };
  });
  return { operationId, next: value };
}

/** Report's Lambda: builds the envelope from the recorded outcome and marks it delivered to the model. */
export async function reportOperation(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  await mutate(deps.store, first.runId, operationId, (_run, op) => {
    const reported = { type: 'result.reported' as const, operationId: op.operationId, callId: op.callId };
    if (SETTLED.includes(op.state) && op.outcome && !op.envelope) {
      const envelope = envelopeFor(op, op.outcome);
      const moved = moveTo(op, 'reported', { envelope, plan: { next: 'done' }, leaseUntil: undefined });
      return { value: undefined, change: { op: moved.op, events: [...moved.events, { ...reported, detail: { status: envelope.status } }] } };
    }
    if (op.state === 'outcome_unknown' && op.review?.required && !op.envelope) {
      const envelope = envelopeFor(op, op.lastAttempt?.outcome.kind === 'outcome_unknown' ? op.lastAttempt.outcome : { kind: 'outcome_unknown', code: 'timeout_unknown', message: 'the outcome of the call is unknown' });
      return { value: undefined, change: { op: { ...op, envelope, plan: { next: 'done' } }, events: [{ ...reported, detail: { status: envelope.status, review: 'required' } }] } };
    }
    return { value: undefined };
  });
  return { operationId, next: 'done' };
}
