import { type Envelope, envelopeFor } from './envelope';
import { OperationState } from './lifecycle';
import type { NextStep, OperationRecord } from './model';
import { attemptUnfinished, lateAttemptUnsettled } from './record-predicates';

const S = OperationState;

/**
 * The envelope the model gets, as soon as it is decided: once the outcome is recorded (or handed to a
 * person) it is fixed, so a waiting request can answer before Report marks it delivered.
 */
export function envelopeOf(op: OperationRecord): Envelope | undefined {
  if (op.envelope) return op.envelope;
  if (op.state === S.outcomeUnknown) {
    if (!op.review?.required) return undefined;
    const unknown =
      op.lastAttempt?.outcome.kind === 'outcome_unknown'
        ? op.lastAttempt.outcome
        : ({ kind: 'outcome_unknown', code: 'timeout_unknown', message: 'the outcome of the call is unknown' } as const);
    return envelopeFor(op, unknown);
  }
  return op.outcome && op.state !== S.reported ? envelopeFor(op, op.outcome) : undefined;
}

/** Where the lifecycle goes next, derived only from the durable record and the clock. */
export function nextStep(op: OperationRecord, now: number): NextStep {
  switch (op.state) {
    case S.proposed:
      return 'validate';
    // A first attempt that found its resource's lock held waits (plan `retry`) before it looks again.
    case S.validated:
      if (op.approvalRequired) return 'await_approval';
      return op.plan?.next === 'retry' ? 'retry' : 'execute';
    case S.awaitingApproval:
      if (op.approval?.state === 'approved') return op.plan?.next === 'retry' ? 'retry' : 'execute';
      if (op.approval?.state === 'pending') return now >= Date.parse(op.approval.expiresAt) ? 'expire_approval' : 'await_approval';
      return 'report';
    case S.executing:
      if (attemptUnfinished(op)) {
        if (op.plan?.next !== 'execute') return 'reconcile';
        // An unclaimed attempt handed back after a throttle waits out its recorded backoff first.
        return op.plan.notBefore && now < Date.parse(op.plan.notBefore) ? 'retry' : 'execute';
      }
      return 'retry';
    case S.outcomeUnknown:
      if (op.review?.required) return op.envelope ? 'done' : 'report';
      if (op.plan?.next === 'retry') return 'retry';
      if (op.plan?.next === 'reconcile_later') return 'reconcile_later';
      return 'reconcile';
    case S.recorded:
    case S.rejected:
    case S.failedPermanent:
    case S.budgetExhausted:
    case S.cancelled:
      return op.envelope ? 'done' : 'report';
    case S.reported:
      if (!lateAttemptUnsettled(op)) return 'done';
      return op.plan?.next === 'reconcile_later' ? 'reconcile_later' : 'reconcile';
  }
}

/** What every Task returns to Step Functions: where to go next, with the timers the next state needs. */
export interface StepOutput {
  operationId: string;
  next: NextStep;
  delaySeconds?: number;
  /** The Express machine hands the operation to the Standard one (an attempt that could outlast the execution). */
  handoff?: true;
  /** Seconds left until the approval expires, for AwaitApproval's TimeoutSecondsPath (see the ASL for why here). */
  Payload?: { approvalTimeoutSeconds: number };
}

/** The one place a step's output is built, so a timer field can never be lost on any path. */
export function stepOutput(op: OperationRecord, now: number, approvalTtlSeconds?: number): StepOutput {
  const next = nextStep(op, now);
  const out: StepOutput = { operationId: op.operationId, next };
  if (next === 'await_approval') {
    // Not requested yet: the wait lasts the configured time to live, as the request will say.
    const expiresAt = op.approval?.expiresAt ? Date.parse(op.approval.expiresAt) : now + (approvalTtlSeconds ?? 0) * 1000;
    out.Payload = { approvalTimeoutSeconds: Math.max(1, Math.ceil((expiresAt - now) / 1000)) };
  }
  if (next === 'retry' || next === 'reconcile_later') {
    const notBefore = op.plan?.notBefore ? Date.parse(op.plan.notBefore) : now;
    out.delaySeconds = Math.max(0, Math.ceil((notBefore - now) / 1000));
  }
  return out;
}

/**
 * A step that found another delivery of itself at work (an attempt in flight under the same execution): look
 * again in `seconds` (1 to 10), through the Backoff wait, instead of acting on the record now.
 */
export function waitOutput(op: OperationRecord, seconds: number): StepOutput {
  return { operationId: op.operationId, next: 'retry', delaySeconds: Math.min(10, Math.max(1, Math.ceil(seconds))) };
}
