import type { AfterAttempt, DoubtSettlement, ReconcilePlan } from './attempt-policy';
import { type Envelope, envelopeFor } from './envelope';
import { stepLease } from './leases';
import { moveTo, OperationState } from './lifecycle';
import { type ApprovalInfo, type Failure, type NextStep, type OperationRecord, type Outcome, SCHEMA_VERSION } from './model';
import {
  approvalPending,
  attemptPresumedLost,
  inDoubtBefore,
  attemptUnfinished,
  lateAttemptUnsettled,
  requesterOf,
  upstreamStatusOf,
} from './record-predicates';
import { outcomeSummary, recordLate, recordOutcome } from './settle';
import type { NewTraceEvent } from './trace';

/**
 * The lifecycle engine: one pure function from (record, event, now) to the next record and its trace
 * events. Steps do the I/O (tool calls, lookups, Step Functions) and describe what they learned as an
 * event; this module alone decides what that means for the record. Nothing else changes an operation:
 * a submission's first record comes from `propose`, every later one from `transition`.
 *
 * What happens when… (the handler below ← the step that sends its event):
 * - a call is submitted: `propose`, then `validate` (a denial also `report`s at once; a replay-safe tool's
 *   first attempt `startAttempt`s in the same write), or `exhaustBudget` and `report` when the run's
 *   budgets refuse it ← steps/submit.ts.
 * - an approval is requested, decided or expires: `requestApproval`, `decideApproval`, `expireApproval`
 *   ← steps/approval.ts.
 * - an attempt is about to start: `startAttempt`; `refuseAttempt` when authorization, the run or the
 *   deadline stop it; `lockBusy` when another operation holds the tool's lock ← steps/execute.ts.
 * - an attempt finishes: `finishAttempt`, with what core/attempt-policy.ts decided from its outcome:
 *   record it, retry after a backoff, or reconcile ← steps/execute.ts.
 * - a write times out (or fails after it may have been sent): core/classify.ts calls it outcome_unknown,
 *   so `finishAttempt` moves it to outcome_unknown to reconcile; then `startReconcile` and
 *   `finishReconcile` (a status lookup, a replay with the same key, or a person) ← steps/reconcile.ts.
 * - an attempt is lost (its worker vanished after the intent write): `loseAttempt` (outcome_unknown,
 *   reconciled as above) ← steps/resume.ts (the sweeper), steps/reconcile.ts, steps/execute.ts.
 * - a cancel arrives: `cancel` settles and reports at once ← steps/cancel.ts. An attempt still in flight
 *   keeps its lease: its answer is `finishAttempt`'s late branch (kept, never reported); if it never
 *   answers, the sweeper resumes it and `finishReconcile` → `settleLateAttempt` records what happened.
 * - a person resolves an unknown outcome: `resolve` ← steps/cancel.ts.
 * - an outcome is settled: `report`, in the same write ← steps/advance.ts (and steps/report.ts).
 * - an execution is lost: `resume` (after `loseAttempt` if an attempt was in flight) ← steps/resume.ts.
 */

/** What the validation step decided (see call-policy), as the engine needs it. */
export type Validation =
  | {
      decision: 'allow';
      risk: OperationRecord['risk'];
      frozenArguments: string;
      costCents: number;
      approvalRequired: boolean;
      deadlineAt: string;
      detail: Record<string, unknown>;
    }
  | { decision: 'deny'; outcome: Exclude<Outcome, { kind: 'succeeded' }>; detail: Record<string, unknown> };

export type ReconcileFinding =
  | { result: 'found'; outcome: Outcome }
  /** `lookAgainInSeconds`: nothing found, but too soon to conclude (steps/reconcile.ts); look again then. */
  | { result: 'not_found'; retry: { delaySeconds: number } | undefined; lookAgainInSeconds?: number }
  | { result: 'lookup_failed'; retryInSeconds: number | undefined }
  | { result: 'needs_review'; reason: string };

export type LifecycleEvent =
  | { type: 'validate'; validation: Validation; leaseUntil: string }
  | { type: 'exhaust_budget'; message: string }
  | { type: 'request_approval'; approvalId: string; expiresAt: string; taskToken: string; leaseUntil: string }
  | { type: 'decide_approval'; decision: 'approve' | 'reject'; by: string; reason?: string }
  | { type: 'expire_approval' }
  | { type: 'start_attempt'; leaseUntil: string }
  | {
      type: 'refuse_attempt';
      outcome: Exclude<Outcome, { kind: 'succeeded' }>;
      /** An earlier attempt may still take effect: how the refusal is settled (core/attempt-policy.ts). */
      inDoubt?: DoubtSettlement;
    }
  | {
      type: 'finish_attempt';
      attempt: number;
      outcome: Outcome;
      latencyMs: number;
      upstreamStatus?: number;
      after: AfterAttempt;
      leaseUntil?: string;
    }
  | { type: 'lose_attempt'; leaseUntil: string }
  | { type: 'lock_busy'; delaySeconds: number; leaseUntil: string }
  | { type: 'start_reconcile'; plan: ReconcilePlan; leaseUntil: string }
  | { type: 'finish_reconcile'; plan: ReconcilePlan; finding: ReconcileFinding; leaseUntil?: string }
  | { type: 'cancel'; reason: string }
  | { type: 'resolve'; verdict: 'succeeded' | 'failed'; by: string; note: string }
  | { type: 'report' }
  | { type: 'resume'; leaseUntil: string };

export type LifecycleEventType = LifecycleEvent['type'];

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
  start_attempt: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
  refuse_attempt: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
  finish_attempt: {
    states: [S.executing, S.outcomeUnknown, S.cancelled, S.reported],
    // In outcome_unknown: the worker was presumed lost but answered after all; its answer settles the doubt.
    guard: (op) => attemptUnfinished(op) || attemptPresumedLost(op) || (op.outcome?.kind === 'cancelled' && !op.lateOutcome),
  },
  lose_attempt: { states: [S.executing], guard: attemptUnfinished },
  lock_busy: { states: [S.validated, S.awaitingApproval, S.executing, S.outcomeUnknown], guard: readyToAttempt },
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

export class InvalidEventError extends Error {
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

export interface Transition {
  op: OperationRecord;
  events: NewTraceEvent[];
}

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

/** What every handler may use besides the record and its event. */
interface Context {
  now: number;
  /** `now` as the record writes it. */
  at: string;
  /** What every trace event of this operation names. */
  ids: { operationId: string; callId: string };
}

type EventOf<K extends LifecycleEventType> = Extract<LifecycleEvent, { type: K }>;
type Handler<K extends LifecycleEventType> = (op: OperationRecord, event: EventOf<K>, ctx: Context) => Transition;

const noEvents = (op: OperationRecord): Transition => ({ op, events: [] });
const notBeforeIn = (ctx: Context, seconds: number) => new Date(ctx.now + seconds * 1000).toISOString();

const validate: Handler<'validate'> = (op, event, { ids }) => {
  const v = event.validation;
  const decided: NewTraceEvent = { type: 'policy.decision', ...ids, detail: v.detail };
  if (v.decision === 'deny') {
    const settled = recordOutcome(op, v.outcome);
    return { op: settled.op, events: [decided, ...settled.events] };
  }
  const moved = moveTo(op, S.validated, {
    risk: v.risk,
    // The record keeps its arguments once: the frozen ones from here on (inputHash names what was sent).
    rawArguments: undefined,
    frozenArguments: v.frozenArguments,
    costCents: v.costCents,
    approvalRequired: v.approvalRequired,
    deadlineAt: v.deadlineAt,
    leaseUntil: event.leaseUntil,
    plan: { next: v.approvalRequired ? 'await_approval' : 'execute' },
  });
  return { op: moved.op, events: [decided, ...moved.events] };
};

const exhaustBudget: Handler<'exhaust_budget'> = (op, event) =>
  recordOutcome(op, { kind: 'budget_exhausted', code: 'budget_exhausted', message: event.message });

const requestApproval: Handler<'request_approval'> = (op, event, { ids }) => {
  if (op.state === S.awaitingApproval) {
    // A resumed wait: only the token changes; the request, its expiry and its notification stay as they were.
    return noEvents({ ...op, approvalTaskToken: event.taskToken, leaseUntil: event.leaseUntil });
  }
  const approval: ApprovalInfo = { approvalId: event.approvalId, state: 'pending', expiresAt: event.expiresAt };
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

const startAttempt: Handler<'start_attempt'> = (op, event, { ids }) => {
  const attempt = op.attempts + 1;
  const moved = moveTo(op, S.executing, {
    attempts: attempt,
    leaseUntil: event.leaseUntil,
    plan: { next: 'execute' },
    failureToConfirm: undefined,
  });
  return { op: moved.op, events: [...moved.events, { type: 'attempt.started', ...ids, attempt }] };
};

const refuseAttempt: Handler<'refuse_attempt'> = (op, event, ctx) => {
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
  return recordOutcome(op, failure ?? refused);
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

const finishAttempt: Handler<'finish_attempt'> = (op, event, ctx) => {
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
const loseAttempt: Handler<'lose_attempt'> = (op, event, { at }) =>
  moveTo(
    op,
    S.outcomeUnknown,
    { plan: { next: 'reconcile' }, ...unanswered(op, op.attempts, at), leaseUntil: event.leaseUntil },
    { reason: 'attempt_lost' },
  );

const lockBusy: Handler<'lock_busy'> = (op, event, ctx) => {
  const waiting =
    op.state === S.executing || op.state === S.outcomeUnknown
      ? { ...op, plan: { next: 'retry' as const, notBefore: notBeforeIn(ctx, event.delaySeconds) } }
      : op;
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

const startReconcile: Handler<'start_reconcile'> = (op, event, { ids }) => ({
  op: { ...op, plan: { next: 'reconcile' }, leaseUntil: event.leaseUntil },
  events: [{ type: 'reconcile.started', ...ids, attempt: op.attempts, detail: { plan: event.plan } }],
});

type Finished = (detail: Record<string, unknown>) => NewTraceEvent;

const finishReconcile: Handler<'finish_reconcile'> = (op, event, ctx) => {
  const f = event.finding;
  const finished: Finished = (detail) => ({
    type: 'reconcile.finished',
    ...ctx.ids,
    attempt: op.attempts,
    detail: { plan: event.plan, ...detail },
  });
  if (f.result === 'not_found' && f.lookAgainInSeconds !== undefined) {
    return {
      op: {
        ...op,
        plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.lookAgainInSeconds) },
        leaseUntil: event.leaseUntil ?? op.leaseUntil,
      },
      events: [
        finished({ result: 'not_found', action: 'look_again' }),
        { type: 'backoff.scheduled', ...ctx.ids, detail: { delaySeconds: f.lookAgainInSeconds, reason: 'late_request_grace' } },
      ],
    };
  }
  if (op.state === S.reported) return settleLateAttempt(op, f, finished, ctx);
  switch (f.result) {
    case 'found': {
      const settled = recordOutcome(op, f.outcome);
      return { op: settled.op, events: [finished({ result: 'found' }), ...settled.events] };
    }
    case 'needs_review':
      return {
        op: { ...op, review: { required: true, reason: f.reason }, plan: { next: 'report' } },
        events: [finished({ result: 'needs_review', reason: f.reason })],
      };
    case 'lookup_failed': {
      const lookups = (op.reconcileAttempts ?? 0) + 1;
      if (f.retryInSeconds === undefined) {
        const reason = `status lookup failed ${lookups} times`;
        return {
          op: { ...op, reconcileAttempts: lookups, review: { required: true, reason }, plan: { next: 'report' } },
          events: [finished({ result: 'needs_review', reason })],
        };
      }
      return {
        op: {
          ...op,
          reconcileAttempts: lookups,
          plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.retryInSeconds) },
          leaseUntil: event.leaseUntil ?? op.leaseUntil,
        },
        events: [finished({ result: 'lookup_failed', retryInSeconds: f.retryInSeconds })],
      };
    }
    case 'not_found':
      return notFound(op, event, f, finished, ctx);
  }
};

/** Nothing was found (or a replay is due): send the attempt again with the same key while attempts remain, else a person. */
function notFound(
  op: OperationRecord,
  event: EventOf<'finish_reconcile'>,
  f: Extract<ReconcileFinding, { result: 'not_found' }>,
  finished: Finished,
  ctx: Context,
): Transition {
  const result = event.plan === 'replay' ? 'replay' : 'not_found';
  if (!f.retry && event.plan === 'lookup' && op.outcome?.kind !== 'cancelled') {
    // A conclusive lookup (steps/reconcile.ts) is the upstream's own word: nothing took effect. With no attempts
    // left (or a failure waiting for this word) the call failed; no person is needed to say so.
    const settled = recordOutcome(
      { ...op, failureToConfirm: undefined },
      op.failureToConfirm ?? {
        kind: 'failed_permanent',
        code: 'upstream_unavailable',
        message: 'the upstream has no record of the call and no attempts are left; nothing took effect',
      },
    );
    return { op: settled.op, events: [finished({ result: 'not_found', action: 'fail' }), ...settled.events] };
  }
  if (!f.retry) {
    const reason = `${result}; no attempts left`;
    return {
      op: { ...op, review: { required: true, reason }, plan: { next: 'report' } },
      events: [finished({ result: 'needs_review', reason })],
    };
  }
  return {
    op: {
      ...op,
      plan: { next: 'retry', notBefore: notBeforeIn(ctx, f.retry.delaySeconds) },
      leaseUntil: event.leaseUntil ?? op.leaseUntil,
    },
    events: [
      finished({ result, action: 'retry_same_key' }),
      {
        type: 'backoff.scheduled',
        ...ctx.ids,
        attempt: op.attempts + 1,
        detail: { delaySeconds: f.retry.delaySeconds, reason: 'reconcile' },
      },
    ],
  };
}

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

const resume: Handler<'resume'> = (op, event) => noEvents({ ...op, resumes: op.resumes + 1, leaseUntil: event.leaseUntil });

/** One handler per event: the mapped type makes the compiler refuse a table that misses one. */
const HANDLERS: { [K in LifecycleEventType]: Handler<K> } = {
  validate,
  exhaust_budget: exhaustBudget,
  request_approval: requestApproval,
  decide_approval: decideApproval,
  expire_approval: expireApproval,
  start_attempt: startAttempt,
  refuse_attempt: refuseAttempt,
  finish_attempt: finishAttempt,
  lose_attempt: loseAttempt,
  lock_busy: lockBusy,
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

/** What a reconciliation found about the attempt a cancel left in flight: recorded late, never reported. */
function settleLateAttempt(op: OperationRecord, f: ReconcileFinding, finished: Finished, ctx: Context): Transition {
  switch (f.result) {
    case 'found': {
      const late = recordLate(op, f.outcome, op.attempts);
      return { op: { ...late.op, plan: { next: 'done' }, leaseUntil: undefined }, events: [finished({ result: 'found' }), ...late.events] };
    }
    case 'not_found': {
      const none = { kind: 'failed_permanent', code: 'permanent_failure', message: 'the cancelled attempt had no effect' } as const;
      return {
        op: { ...op, lateOutcome: none, plan: { next: 'done' }, leaseUntil: undefined },
        events: [finished({ result: 'not_found' })],
      };
    }
    case 'lookup_failed':
      if (f.retryInSeconds !== undefined) {
        return {
          op: {
            ...op,
            reconcileAttempts: (op.reconcileAttempts ?? 0) + 1,
            plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.retryInSeconds) },
          },
          events: [finished({ result: 'lookup_failed', retryInSeconds: f.retryInSeconds })],
        };
      }
      return {
        op: {
          ...op,
          review: { required: true, reason: 'the cancelled attempt may have taken effect; its lookup kept failing' },
          plan: { next: 'done' },
          leaseUntil: undefined,
        },
        events: [finished({ result: 'needs_review' })],
      };
    case 'needs_review':
      return {
        op: { ...op, review: { required: true, reason: f.reason }, plan: { next: 'done' }, leaseUntil: undefined },
        events: [finished({ result: 'needs_review', reason: f.reason })],
      };
  }
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

/** Where the lifecycle goes next, derived only from the durable record and the clock. */
export function nextStep(op: OperationRecord, now: number): NextStep {
  switch (op.state) {
    case S.proposed:
      return 'validate';
    case S.validated:
      return op.approvalRequired ? 'await_approval' : 'execute';
    case S.awaitingApproval:
      if (op.approval?.state === 'approved') return 'execute';
      if (op.approval?.state === 'pending') return now >= Date.parse(op.approval.expiresAt) ? 'expire_approval' : 'await_approval';
      return 'report';
    case S.executing:
      if (attemptUnfinished(op)) return op.plan?.next === 'execute' ? 'execute' : 'reconcile';
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
