import type { DoubtSettlement } from './attempt-protocol';
import { moveTo, OperationState } from './lifecycle';
import { type Handler, type Context, type EventOf, notBeforeIn, type Transition } from './lifecycle-events';
import type { Failure, OperationRecord, Outcome } from './model';
import { inDoubtBefore, upstreamStatusOf } from './record-predicates';
import { outcomeSummary, recordLate, recordOutcome } from './settle';
import type { NewTraceEvent } from './trace';
import { InvalidEventError } from './transition-table';

/** How attempts start, are refused, finish, go missing or wait for a lock (events from steps/execute.ts). */

const S = OperationState;

export const startAttempt: Handler<'start_attempt'> = (op, event, { ids }) => {
  const attempt = op.attempts + 1;
  const moved = moveTo(op, S.executing, {
    attempts: attempt,
    leaseUntil: event.leaseUntil,
    plan: { next: 'execute' },
    failureToConfirm: undefined,
    lockWaits: undefined,
    throttleWaits: undefined,
    attemptResumes: op.resumes,
    attemptClaimed: !event.unclaimed,
  });
  return { op: moved.op, events: [...moved.events, { type: 'attempt.started', ...ids, attempt }] };
};

/** A worker takes the unfinished attempt's send (bookkeeping only: the trace already says the attempt started). */
export const claimAttempt: Handler<'claim_attempt'> = (op, event) => ({
  op: { ...op, attemptClaimed: true, attemptResumes: op.resumes, leaseUntil: event.leaseUntil },
  events: [],
});

export const refuseAttempt: Handler<'refuse_attempt'> = (op, event, ctx) => {
  const refused = event.outcome;
  // From doubt a call settles as recorded or failed only: a refusal (cancelled, budget, forbidden) is a
  // failure that says why.
  const failure: Failure | undefined =
    refused.kind === 'failed_permanent'
      ? refused
      : op.state === S.outcomeUnknown || event.inDoubt
        ? { kind: 'failed_permanent', code: 'permanent_failure', message: refused.message }
        : undefined;
  if (failure && event.inDoubt) return deferFailure(op, failure, event.inDoubt, {}, ctx);
  return recordOutcome(op, failure ?? refused, event.reason ? { reason: event.reason } : undefined);
};

/**
 * A failure while an earlier attempt's outcome is unknown: that request may still take effect (even after
 * a lookup found nothing), so the failure is not recorded on this word alone. With a status lookup it waits
 * for one more lookup and is recorded only if that finds nothing; without one, a person decides.
 */
function deferFailure(
  op: OperationRecord,
  failure: Failure,
  by: DoubtSettlement,
  patch: Partial<OperationRecord>,
  { ids }: Context,
): Transition {
  const doubtful = moveTo(op, S.outcomeUnknown, patch, { reason: 'failure_in_doubt' });
  const decided: NewTraceEvent = {
    type: 'policy.decision',
    ...ids,
    detail: { decision: 'failure_in_doubt', code: failure.code, settledBy: by },
  };
  if (by === 'lookup')
    return { op: { ...doubtful.op, failureToConfirm: failure, plan: { next: 'reconcile' } }, events: [...doubtful.events, decided] };
  const reason = `${failure.message}; an earlier attempt's outcome is unknown and it may have taken effect`;
  return {
    op: { ...doubtful.op, review: { required: true, reason }, plan: { next: 'report' } },
    events: [...doubtful.events, decided, { type: 'reconcile.finished', ...ids, detail: { result: 'needs_review', reason } }],
  };
}

function withoutResult(outcome: Outcome): Outcome {
  if (outcome.kind !== 'succeeded' || !outcome.result) return outcome;
  const { result: _r, ...rest } = outcome;
  return rest;
}

/** `attempt.finished`: the outcome's class and code, never the result itself. */
function attemptFinished(event: EventOf<'finish_attempt'>, ctx: Context): NewTraceEvent {
  return {
    type: 'attempt.finished',
    ...ctx.ids,
    attempt: event.attempt,
    detail: {
      ...outcomeSummary(event.outcome),
      upstreamStatus: event.upstreamStatus ?? upstreamStatusOf(event.outcome) ?? null,
      latencyMs: event.latencyMs,
    },
  };
}

export const finishAttempt: Handler<'finish_attempt'> = (op, event, ctx) => {
  const { ids, at } = ctx;
  const finished = attemptFinished(event, ctx);
  if (op.outcome?.kind === 'cancelled') {
    const o = event.outcome;
    if (o.kind === 'outcome_unknown' || (o.kind !== 'succeeded' && inDoubtBefore(op, event.attempt))) {
      // This answer proves nothing (or an earlier attempt may still land): the operation stays watched, and a
      // reconciliation settles what happened.
      const noted = o.kind === 'outcome_unknown' ? unanswered(op, event.attempt, at) : {};
      return { op: { ...op, ...noted, leaseUntil: event.leaseUntil ?? op.leaseUntil }, events: [finished] };
    }
    // The turn is closed: the result happened and is kept, but it never replaces the cancelled envelope.
    const late = recordLate(op, o, event.attempt);
    return { op: late.op, events: [finished, ...late.events] };
  }
  if (event.attempt !== op.attempts) throw new InvalidEventError(op.state, event.type);
  const lastAttempt = {
    attempt: event.attempt,
    // The result is kept once, in `outcome`; the attempt keeps what it came to.
    outcome: withoutResult(event.outcome),
    latencyMs: event.latencyMs,
    upstreamStatus: event.upstreamStatus,
    finishedAt: at,
  };
  const after = event.after;
  switch (after.next) {
    case 'record': {
      const settled = recordOutcome({ ...op, lastAttempt }, after.outcome);
      return { op: settled.op, events: [finished, ...settled.events] };
    }
    case 'retry': {
      const retryAfter =
        event.outcome.kind === 'failed_retryable' && event.outcome.retryAfterSeconds
          ? { retryAfterSeconds: event.outcome.retryAfterSeconds }
          : {};
      return {
        op: {
          ...op,
          lastAttempt,
          plan: { next: 'retry', notBefore: notBeforeIn(ctx, after.delaySeconds) },
          leaseUntil: event.leaseUntil ?? op.leaseUntil,
        },
        events: [
          finished,
          {
            type: 'backoff.scheduled',
            ...ids,
            attempt: event.attempt + 1,
            detail: { delaySeconds: after.delaySeconds, reason: after.reason, ...retryAfter },
          },
        ],
      };
    }
    case 'reconcile': {
      const noted = { lastAttempt, ...unanswered(op, event.attempt, at) };
      if (op.state === S.outcomeUnknown) return { op: { ...op, ...noted, plan: { next: 'reconcile' } }, events: [finished] };
      const moved = moveTo(op, S.outcomeUnknown, {
        ...noted,
        plan: { next: 'reconcile' },
        leaseUntil: event.leaseUntil ?? op.leaseUntil,
      });
      return { op: moved.op, events: [finished, ...moved.events] };
    }
    case 'confirm': {
      const deferred = deferFailure(op, after.outcome, after.by, { lastAttempt, leaseUntil: event.leaseUntil ?? op.leaseUntil }, ctx);
      return { op: deferred.op, events: [finished, ...deferred.events] };
    }
  }
};

/** What a record notes when an attempt goes unanswered: the first attempt in doubt, and when it was given up on. */
function unanswered(op: OperationRecord, attempt: number, at: string): Pick<OperationRecord, 'inDoubtSince' | 'lastUnansweredAt'> {
  return { inDoubtSince: op.inDoubtSince ?? attempt, lastUnansweredAt: at };
}

// The worker of this attempt vanished after the intent write: the request may have gone out.
export const loseAttempt: Handler<'lose_attempt'> = (op, event, { at }) =>
  moveTo(
    op,
    S.outcomeUnknown,
    { plan: { next: 'reconcile' }, ...unanswered(op, op.attempts, at), leaseUntil: event.leaseUntil },
    { reason: 'attempt_lost' },
  );

// Every state that may attempt waits the same way: a retry not before the delay (never an immediate re-entry).
export const lockBusy: Handler<'lock_busy'> = (op, event, ctx) => {
  const waiting = {
    ...op,
    plan: { next: 'retry' as const, notBefore: notBeforeIn(ctx, event.delaySeconds) },
    lockWaits: (op.lockWaits ?? 0) + 1,
  };
  return {
    op: { ...waiting, leaseUntil: event.leaseUntil },
    events: [
      {
        type: 'backoff.scheduled',
        ...ctx.ids,
        attempt: op.attempts + 1,
        detail: { delaySeconds: event.delaySeconds, reason: 'lock_busy' },
      },
    ],
  };
};

/**
 * An attempt recorded for a worker that never took it (its Execute invocation was throttled past the ASL's
 * retries): it waits, recorded, before it goes back to Execute, instead of cycling Execute → Reconcile at once.
 */
export const deferAttempt: Handler<'defer_attempt'> = (op, event, ctx) => ({
  op: {
    ...op,
    plan: { next: 'execute', notBefore: notBeforeIn(ctx, event.delaySeconds) },
    throttleWaits: (op.throttleWaits ?? 0) + 1,
    leaseUntil: event.leaseUntil,
  },
  events: [
    {
      type: 'backoff.scheduled',
      ...ctx.ids,
      attempt: op.attempts,
      detail: { delaySeconds: event.delaySeconds, reason: 'throttled' },
    },
  ],
});
