import { backoffSeconds, lockWaitSeconds } from './backoff';
import { mayContinue } from './budgets';
import { envelopeOf } from './next-step';
import type { LifecycleEvent, ReconcileFinding } from './lifecycle-events';
import { attemptLease, reconcileLease, stepLease } from './leases';
import type { Failure, OperationRecord, Outcome, RunRecord } from './model';
import { attemptUnfinished, inDoubtBefore, replaySafe } from './record-predicates';
import { backoffOf, type ToolSpec } from './tool-spec';
import { accepts, readyToAttempt } from './transition-table';

/**
 * The attempt protocol, decided here once over the record and the clock: who sends attempt N (the submitting
 * API, Execute, or a worker that claims it), who waits for whom, when an attempt is presumed lost, what comes
 * after an attempt, and how an unknown outcome is settled. Execute, Reconcile, the sweeper's resume and the
 * API's own first attempt ask these; what each event does to the record is core/attempt-transitions.ts.
 */

/** What a step decided from the record it read: a value for itself, and the lifecycle events to apply (none: no write). */
export interface Decision<T> {
  value: T;
  events?: LifecycleEvent[];
}

// --- Who sends the first attempt ---------------------------------------------------------------------------

/**
 * What an attempt run in the submitting process needs beyond the tool's own timeout: the writes before and
 * after it, and the answer. Where the API runs on Lambda the process is frozen once it answers, so an attempt
 * it starts must end before the caller's wait does.
 */
export const INLINE_MARGIN_MS = 3000;

/**
 * A tool whose attempt may be sent again with the same key without risk (a read, or an upstream that
 * dedupes by key) and that needs no lock: its first attempt's intent is written with the submission,
 * so a happy-path call costs two conditional writes (intent with budget, result with trace).
 */
export function intentAtSubmission(tool: ToolSpec): boolean {
  return replaySafe(tool) && !tool.lockKey;
}

/**
 * Whether the submitting process runs the first attempt itself instead of an Express execution that runs it
 * in another function: then no second Lambda is billed while the upstream answers, and no execution either.
 * Only where the whole attempt fits in the caller's wait, where a synchronous (Express) execution exists to
 * finish what the attempt leaves, and not for a tool that takes a lock (the lock table is the Execute function's).
 */
export function submitterSendsFirstAttempt(
  tool: ToolSpec | undefined,
  waitSeconds: number,
  synchronousExecution: boolean,
): tool is ToolSpec {
  return (
    waitSeconds > 0 && synchronousExecution && Boolean(tool) && !tool!.lockKey && tool!.timeoutMs + INLINE_MARGIN_MS <= waitSeconds * 1000
  );
}

// --- Execute: send, claim, wait, hand off, or presume lost ---------------------------------------------------

/** What Execute does with the record it read. */
export type AttemptPlan = { kind: 'send'; attempt: number } | { kind: 'route' } | { kind: 'wait'; seconds: number } | { kind: 'handoff' };

/** What an attempt needs besides the tool's timeout before its execution must end: its own writes, the route after it. */
export const ATTEMPT_MARGIN_MS = 15_000;

/** An attempt begun now could outlast the execution running it (`mustEndBy`, an Express one's end). */
export function outlastsExecution(tool: Pick<ToolSpec, 'timeoutMs'>, now: number, mustEndBy: number | undefined): boolean {
  return mustEndBy !== undefined && now + tool.timeoutMs + ATTEMPT_MARGIN_MS > mustEndBy;
}

/** What Execute's choice depends on besides the record: `checks` are the pre-attempt checks, made when a fresh attempt may start. */
export interface AttemptContext {
  tool: ToolSpec;
  now: number;
  /** The caller recorded the first attempt's intent and sends it itself (the submitting API). */
  holdsIntent: boolean;
  /** An attempt begun now could outlast this execution (`outlastsExecution`). */
  tooLate: boolean;
  checks?: { run: RunRecord | undefined; refusal: string | undefined };
}

/**
 * Execute's choice: send attempt N (a fresh one, or the unfinished one whose intent the submission wrote),
 * wait for the worker sending it, hand the operation to the Standard machine, or go on by the record (and
 * presume an attempt whose worker is gone lost).
 */
export function planAttempt(op: OperationRecord, ctx: AttemptContext): Decision<AttemptPlan> {
  const { tool, now } = ctx;
  const lease = () => attemptLease(now, tool.timeoutMs);
  if (readyToAttempt(op)) {
    if (ctx.tooLate) return { value: { kind: 'handoff' } };
    // A delivery ahead of the lifecycle's own wait (AWS may deliver a task twice): that wait comes first.
    if (op.plan?.notBefore && now < Date.parse(op.plan.notBefore)) return { value: { kind: 'route' } };
    const stop = ctx.checks && preAttemptStop(tool, op, ctx.checks.run, ctx.checks.refusal, now);
    if (stop) return { value: { kind: 'route' }, events: [stop] };
    return { value: { kind: 'send', attempt: op.attempts + 1 }, events: [{ type: 'start_attempt', leaseUntil: lease() }] };
  }
  if (attemptUnfinished(op)) {
    // The first attempt of a replay-safe call, recorded with its submission: the submitting API sends it
    // itself, or the first worker to pick it up claims it (a conditional write), so a second delivery of this
    // step waits instead of sending it beside the first (a failure of one would hide what the other did).
    if (op.plan?.next === 'execute' && replaySafe(tool)) {
      if (ctx.holdsIntent) return { value: { kind: 'send', attempt: op.attempts } };
      if (op.attemptClaimed === false && ctx.tooLate) return { value: { kind: 'handoff' } };
      if (op.attemptClaimed === false)
        return { value: { kind: 'send', attempt: op.attempts }, events: [{ type: 'claim_attempt', leaseUntil: lease() }] };
    }
    // Another delivery of this step, under this execution, is sending it now: wait for its outcome instead
    // of presuming it lost (which would reconcile a call in flight, or send it to a person).
    const leaseLeft = senderLeaseLeftMs(op, now);
    if (leaseLeft > 0) return { value: { kind: 'wait', seconds: leaseLeft / 1000 } };
    // Its worker is gone: its request may still take effect, so it is settled as any unknown outcome.
    return { value: { kind: 'route' }, events: [{ type: 'lose_attempt', leaseUntil: lease() }] };
  }
  return { value: { kind: 'route' } };
}

/**
 * Milliseconds another worker of the current execution may still be sending the unfinished attempt (it took
 * it under this execution and its lease runs), else 0: a step that finds it so waits rather than presuming
 * the attempt lost. (A second delivery of a task, or one whose own invocation was throttled, is not its sender.)
 */
export function senderLeaseLeftMs(op: OperationRecord, now: number): number {
  if (!attemptUnfinished(op) || op.attemptClaimed === false || op.attemptResumes !== op.resumes || !op.leaseUntil) return 0;
  return Math.max(0, Date.parse(op.leaseUntil) - now);
}

/** Pre-attempt checks (authorization, run cancelled or expired, deadline): the event that stops the attempt, if any. */
export function preAttemptStop(
  tool: ToolSpec,
  op: OperationRecord,
  run: RunRecord | undefined,
  refusal: string | undefined,
  now: number,
): LifecycleEvent | undefined {
  const going = run ? mayContinue(run, now) : ({ ok: false, reason: 'run_closed', message: 'the run no longer exists' } as const);
  let outcome: Exclude<Outcome, { kind: 'succeeded' }> | undefined;
  if (refusal) outcome = { kind: 'rejected', code: 'forbidden', message: refusal };
  else if (!going.ok)
    outcome =
      going.reason === 'run_closed'
        ? { kind: 'cancelled', code: 'cancelled', message: going.message }
        : { kind: 'budget_exhausted', code: 'budget_exhausted', message: going.message };
  else if (op.deadlineAt && now + tool.timeoutMs > Date.parse(op.deadlineAt)) {
    outcome = {
      kind: 'failed_permanent',
      code: 'permanent_failure',
      message: op.lastAttempt ? 'the operation reached its deadline' : 'the operation reached its deadline before its first attempt',
    };
  }
  const inDoubt = settleFailureBy(tool, op, op.attempts + 1);
  return outcome && { type: 'refuse_attempt', outcome, ...(inDoubt ? { inDoubt } : {}) };
}

/**
 * The lock is held by another operation: wait with the lock wait's backoff (core/backoff.ts), or, when the
 * next look would come too late for an attempt before the operation's deadline, end it (`lock_wait_deadline`).
 */
export function lockWaitEvents(tool: ToolSpec, op: OperationRecord, now: number): LifecycleEvent[] {
  if (!accepts(op, 'lock_busy')) return [];
  const delaySeconds = lockWaitSeconds(op.lockWaits ?? 0);
  if (op.deadlineAt && now + delaySeconds * 1000 + tool.timeoutMs > Date.parse(op.deadlineAt)) {
    const outcome = {
      kind: 'failed_permanent',
      code: 'permanent_failure',
      message: 'the operation reached its deadline waiting for another call on the same resource (lock_wait_deadline)',
    } as const;
    const inDoubt = settleFailureBy(tool, op, op.attempts + 1);
    return [{ type: 'refuse_attempt', outcome, reason: 'lock_wait_deadline', ...(inDoubt ? { inDoubt } : {}) }];
  }
  return [{ type: 'lock_busy', delaySeconds, leaseUntil: attemptLease(now, tool.timeoutMs, delaySeconds) }];
}

/** The tool is gone from the registry (a redeploy without it): no attempt can start; an unknown one goes to a person. */
export function withoutToolEvents(op: OperationRecord, toolName: string, now: number): LifecycleEvent[] {
  if (readyToAttempt(op)) {
    const outcome = {
      kind: 'failed_permanent',
      code: 'permanent_failure',
      message: `the tool ${toolName} is no longer registered`,
    } as const;
    const inDoubt = settleFailureBy(undefined, op, op.attempts + 1);
    return [{ type: 'refuse_attempt', outcome, ...(inDoubt ? { inDoubt } : {}) }];
  }
  if (accepts(op, 'lose_attempt')) return [{ type: 'lose_attempt', leaseUntil: stepLease(now) }];
  return [];
}

/** What the attempt's worker observed, besides its outcome. */
export interface AttemptAnswer {
  attempt: number;
  outcome: Outcome;
  latencyMs: number;
  upstreamStatus?: number;
}

/**
 * The attempt's answer, recorded unless the record moved past it (another attempt, or a settlement): with
 * what comes after it (`decideAfterAttempt`) and the lease that covers that.
 */
export function finishAttemptEvents(
  tool: ToolSpec,
  op: OperationRecord,
  answer: AttemptAnswer,
  now: number,
  random: () => number,
): LifecycleEvent[] {
  if (!accepts(op, 'finish_attempt') || (op.outcome?.kind !== 'cancelled' && op.attempts !== answer.attempt)) return [];
  const after = decideAfterAttempt(tool, op, answer.outcome, now, random);
  return [
    {
      type: 'finish_attempt',
      attempt: answer.attempt,
      outcome: answer.outcome,
      latencyMs: answer.latencyMs,
      upstreamStatus: answer.upstreamStatus,
      after,
      leaseUntil: after.next === 'retry' ? attemptLease(now, tool.timeoutMs, after.delaySeconds) : stepLease(now),
    },
  ];
}

/**
 * A resumed execution (the sweeper, an operator's nudge) presumes an attempt in flight at the crash lost: it
 * may have reached the upstream, so it is reconciled, never sent again blindly.
 */
export function resumeEvents(op: OperationRecord, now: number): LifecycleEvent[] {
  const leaseUntil = stepLease(now);
  const lost: LifecycleEvent[] = accepts(op, 'lose_attempt') ? [{ type: 'lose_attempt', leaseUntil }] : [];
  return [...lost, { type: 'resume', leaseUntil }];
}

// --- After an attempt ----------------------------------------------------------------------------------------

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

// --- Reconcile: wait, defer, or presume lost; then what the reconciliation established ------------------------

/**
 * Reconcile's start. Step Functions reaches Reconcile when an Execute task failed. That may be a second
 * delivery of it, throttled before it ran, while the first still sends the attempt: a worker within its lease
 * is waited for (`waitMs`), and an attempt no worker has taken yet goes back to Execute after a recorded
 * backoff (Execute was throttled past the ASL's retries; going back at once would only spend invocations and
 * transitions on the same throttle). Only an attempt whose worker is gone is presumed lost. `true`: reconcile now.
 */
export function reconcileStart(
  op: OperationRecord,
  tool: Pick<ToolSpec, 'timeoutMs'> | undefined,
  plan: ReconcilePlan,
  now: number,
): Decision<boolean | { waitMs: number }> {
  const lease = () => reconcileLease(now);
  if (accepts(op, 'lose_attempt')) {
    if (op.attemptClaimed === false) {
      const delaySeconds = lockWaitSeconds(op.throttleWaits ?? 0);
      const leaseUntil = attemptLease(now, tool?.timeoutMs ?? 0, delaySeconds);
      return { value: false, events: [{ type: 'defer_attempt', delaySeconds, leaseUntil }] };
    }
    const waitMs = senderLeaseLeftMs(op, now);
    if (waitMs > 0) return { value: { waitMs } };
    return {
      value: true,
      events: [
        { type: 'lose_attempt', leaseUntil: lease() },
        { type: 'start_reconcile', plan, leaseUntil: lease() },
      ],
    };
  }
  if (accepts(op, 'start_reconcile')) return { value: true, events: [{ type: 'start_reconcile', plan, leaseUntil: lease() }] };
  return { value: false };
}

/** What a status lookup answered: nothing found, or what was found, checked and recorded as an attempt's output is. */
export type Lookup = { ok: true; found: false } | { ok: true; found: true; outcome: Outcome } | { ok: false };

/** What the reconciliation established, decided here once from the tool's policy and what the lookup said. */
export function reconcileFinding(
  tool: ToolSpec | undefined,
  op: OperationRecord,
  plan: ReconcilePlan,
  lookup: Lookup | undefined,
  now: number,
  random: () => number,
): ReconcileFinding {
  if (!tool || plan === 'review') return { result: 'needs_review', reason: 'the tool cannot be replayed safely or looked up' };
  if (op.outcome?.kind === 'cancelled' && plan === 'replay') {
    // A cancelled call is never sent again: a read had no effect to find; a write goes to a person.
    return tool.risk === 'read'
      ? { result: 'not_found', retry: undefined }
      : { result: 'needs_review', reason: 'the cancelled attempt may have taken effect' };
  }
  const retrySameKey = (delaySeconds: number): ReconcileFinding => ({
    result: 'not_found',
    retry: op.attempts < tool.maxAttempts ? { delaySeconds } : undefined,
  });
  // A failure waits for a lookup's word; a tool without one (re-registered since) leaves it to a person.
  if (op.failureToConfirm && plan !== 'lookup') return { result: 'needs_review', reason: op.failureToConfirm.message };
  if (plan === 'replay') return retrySameKey(backoffSeconds(op.attempts + 1, backoffOf(tool), random));
  if (!lookup?.ok) {
    const lookups = (op.reconcileAttempts ?? 0) + 1;
    return {
      result: 'lookup_failed',
      retryInSeconds: lookups >= MAX_RECONCILE_LOOKUPS ? undefined : backoffSeconds(lookups + 1, backoffOf(tool), random),
    };
  }
  if (!lookup.found) {
    const sendsAgain = op.outcome?.kind !== 'cancelled' && !op.failureToConfirm && op.attempts < tool.maxAttempts;
    if (sendsAgain) return retrySameKey(0);
    // Nothing found and nothing sent again: conclusive only once the request last given up on has had as
    // long again as the tool's timeout to land (it may have been overtaken on its way).
    const tooSoonMs = op.lastUnansweredAt ? Date.parse(op.lastUnansweredAt) + tool.timeoutMs - now : 0;
    return { result: 'not_found', retry: undefined, ...(tooSoonMs > 0 ? { lookAgainInSeconds: Math.ceil(tooSoonMs / 1000) } : {}) };
  }
  if (lookup.outcome.kind !== 'succeeded')
    return {
      result: 'needs_review',
      reason: `the status lookup found the effect, but ${'message' in lookup.outcome ? lookup.outcome.message : 'its answer is invalid'}`,
    };
  return { result: 'found', outcome: lookup.outcome };
}

/** The reconciliation's answer, recorded unless the record moved past it, with the lease that covers what it leads to. */
export function finishReconcileEvents(
  tool: ToolSpec | undefined,
  op: OperationRecord,
  plan: ReconcilePlan,
  lookup: Lookup | undefined,
  now: number,
  random: () => number,
): LifecycleEvent[] {
  if (!accepts(op, 'finish_reconcile')) return [];
  const finding = reconcileFinding(tool, op, plan, lookup, now, random);
  return [{ type: 'finish_reconcile', plan, finding, leaseUntil: leaseAfter(now, tool, finding) }];
}

function leaseAfter(now: number, tool: ToolSpec | undefined, finding: ReconcileFinding): string {
  const waitSeconds =
    finding.result === 'not_found'
      ? (finding.retry?.delaySeconds ?? finding.lookAgainInSeconds ?? 0)
      : finding.result === 'lookup_failed'
        ? (finding.retryInSeconds ?? 0)
        : 0;
  return reconcileLease(now, waitSeconds, tool?.timeoutMs);
}

// --- The waiting caller ---------------------------------------------------------------------------------------

/** A caller waiting on the call (`Prefer: wait`) is answered once the model's envelope is decided, or a person is asked. */
export function callerAnswerable(op: OperationRecord): boolean {
  return Boolean(envelopeOf(op)) || (op.state === 'awaiting_approval' && op.approval?.state === 'pending');
}
