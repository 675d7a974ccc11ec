import { decideAfterAttempt, settleFailureBy } from '../core/attempt-policy';
import { lockWaitSeconds } from '../core/backoff';
import { mayContinue } from '../core/budgets';
import { deepFreeze } from '../core/canonical';
import { classifyAttempt } from '../core/classify';
import { accepts, readyToAttempt } from '../core/transition-table';
import { stepOutput, type StepOutput, waitOutput } from '../core/next-step';
import type { LifecycleEvent } from '../core/lifecycle-events';
import { attemptLease, attemptLockMs, stepLease } from '../core/leases';
import type { OperationRecord, Outcome, RunRecord } from '../core/model';
import { recheckCall } from '../core/call-policy';
import { decidingPrincipal } from '../core/policy';
import type { Deps } from '../core/ports';
import { attemptUnfinished, replaySafe, requesterOf, senderLeaseLeftMs } from '../core/record-predicates';
import type { ToolSpec } from '../core/tool-spec';
import { advance, mustGet } from './advance';
import { lockKeyOf, releaseLockIfSettled, renewLock } from './locks';
import { tracedAttempt } from './telemetry';
import { placeResult } from './results';
import { callTool, toolCode } from './tool-call';

type Plan = { kind: 'send'; attempt: number } | { kind: 'route' } | { kind: 'wait'; seconds: number } | { kind: 'handoff' };

/** What an attempt needs besides the tool's timeout before its execution must end: its own writes, the route after it. */
const ATTEMPT_MARGIN_MS = 15_000;

/**
 * Execute's Lambda: exactly one attempt. Its intent (state `executing`, attempt number, same idempotency
 * key) is committed before the network call, by this step or, for replay-safe tools, with the submission;
 * its outcome is committed before anything reports it. `known`: the record as its caller just wrote it (the
 * submission running the attempt itself), which saves a read; a stale one only costs a conditional write's retry.
 * `holdsIntent`: the caller recorded the first attempt's intent and sends it itself (the submitting API).
 * `mustEndBy`: when the execution running this step ends (an Express one: five minutes after it started); an
 * attempt that could outlast it is not begun here but handed to the Standard machine.
 */
export async function executeStep(
  deps: Deps,
  operationId: string,
  known?: OperationRecord,
  holdsIntent = false,
  mustEndBy?: number,
): Promise<StepOutput> {
  const first = known?.operationId === operationId ? known : await mustGet(deps, operationId);
  const tool = deps.tools.get(first.toolName);
  if (!tool || !first.frozenArguments) return refuseWithoutTool(deps, first);
  const input = deepFreeze(tool.inputSchema.parse(JSON.parse(first.frozenArguments)));
  const lockKey = lockKeyOf(tool, input);

  const lease = () => attemptLease(deps.now(), tool.timeoutMs);
  if (lockKey && !(await renewLock(deps, lockKey, operationId, attemptLockMs(tool.timeoutMs)))) {
    const busy = await advance(deps, first, (op) => ({ value: undefined, events: lockWaitEvents(tool, op, deps.now()) }));
    return stepOutput(busy.op, deps.now());
  }

  // A fresh attempt re-checks authorization and the run first (permissions can change while an approval waits).
  const checks = readyToAttempt(first) ? await preAttemptContext(deps, first, tool, input) : undefined;
  const tooLate = mustEndBy !== undefined && deps.now() + tool.timeoutMs + ATTEMPT_MARGIN_MS > mustEndBy;
  const begun = await advance<Plan>(deps, first, (op) => {
    if (readyToAttempt(op)) {
      if (tooLate) return { value: { kind: 'handoff' } };
      // A delivery ahead of the lifecycle's own wait (AWS may deliver a task twice): that wait comes first.
      if (op.plan?.notBefore && deps.now() < Date.parse(op.plan.notBefore)) return { value: { kind: 'route' } };
      const stop = checks && preAttemptStop(tool, op, checks.run, checks.refusal, deps.now());
      if (stop) return { value: { kind: 'route' }, events: [stop] };
      return { value: { kind: 'send', attempt: op.attempts + 1 }, events: [{ type: 'start_attempt', leaseUntil: lease() }] };
    }
    if (attemptUnfinished(op)) {
      // The first attempt of a replay-safe call, recorded with its submission: the submitting API sends it
      // itself, or the first worker to pick it up claims it (a conditional write), so a second delivery of this
      // step waits instead of sending it beside the first (a failure of one would hide what the other did).
      if (op.plan?.next === 'execute' && replaySafe(tool)) {
        if (holdsIntent) return { value: { kind: 'send', attempt: op.attempts } };
        if (op.attemptClaimed === false && tooLate) return { value: { kind: 'handoff' } };
        if (op.attemptClaimed === false)
          return { value: { kind: 'send', attempt: op.attempts }, events: [{ type: 'claim_attempt', leaseUntil: lease() }] };
      }
      // Another delivery of this step, under this execution, is sending it now: wait for its outcome instead
      // of presuming it lost (which would reconcile a call in flight, or send it to a person).
      const leaseLeft = senderLeaseLeftMs(op, deps.now());
      if (leaseLeft > 0) return { value: { kind: 'wait', seconds: leaseLeft / 1000 } };
      // Its worker is gone: its request may still take effect, so it is settled as any unknown outcome.
      return { value: { kind: 'route' }, events: [{ type: 'lose_attempt', leaseUntil: lease() }] };
    }
    return { value: { kind: 'route' } };
  });
  if (begun.value.kind === 'wait') return waitOutput(begun.op, begun.value.seconds);
  if (begun.value.kind === 'handoff') return { ...stepOutput(begun.op, deps.now()), handoff: true };
  if (begun.value.kind === 'route') {
    await releaseLockIfSettled(deps, lockKey, begun.op);
    return stepOutput(begun.op, deps.now());
  }
  const attempt = begun.value.attempt;
  const { call, outcome } = await tracedAttempt(deps, tool, begun.op, attempt, async () => {
    const call = await callTool(
      deps,
      operationId,
      { idempotencyKey: begun.op.idempotencyKey, attempt, timeoutMs: tool.timeoutMs, abortOnCancel: tool.risk === 'read' },
      toolCode(deps, tool, 'execute', { operationId, frozenArguments: first.frozenArguments!, input }),
    );
    const classified = classifyAttempt(tool, call.ok ? { ok: true, value: call.value } : { ok: false, thrown: call.thrown });
    return { call, outcome: await placeResult(deps, tool, operationId, String(attempt), classified) };
  });
  const finished = await advance(deps, begun.op, (op) => {
    if (!accepts(op, 'finish_attempt') || (op.outcome?.kind !== 'cancelled' && op.attempts !== attempt)) return { value: undefined };
    const after = decideAfterAttempt(tool, op, outcome, deps.now(), deps.random);
    const event: LifecycleEvent = {
      type: 'finish_attempt',
      attempt,
      outcome,
      latencyMs: call.latencyMs,
      upstreamStatus: call.upstreamStatus,
      after,
      leaseUntil: after.next === 'retry' ? attemptLease(deps.now(), tool.timeoutMs, after.delaySeconds) : stepLease(deps.now()),
    };
    return { value: undefined, events: [event] };
  });
  await releaseLockIfSettled(deps, lockKey, finished.op);
  return stepOutput(finished.op, deps.now());
}

/** The run as it is now, and why the call may no longer go on if it may not (roles, tool list, the policies again). */
async function preAttemptContext(
  deps: Deps,
  op: OperationRecord,
  tool: ToolSpec,
  input: unknown,
): Promise<{ run: RunRecord | undefined; refusal: string | undefined }> {
  const [run, config] = await Promise.all([deps.store.getRun(op.runId), deps.config()]);
  const policy = await deps.policies?.(config);
  // The requester as the config says now, or a token principal as it authenticated at submission.
  const principal = decidingPrincipal(config, requesterOf(op), op.requesterGrant);
  const check = recheckCall({ tool, principal, frozenInput: input, run, now: deps.now(), policy });
  return { run, refusal: check.allowed ? undefined : check.message };
}

/** Pre-attempt checks (authorization, run cancelled or expired, deadline): the event that stops the attempt, if any. */
function preAttemptStop(
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
function lockWaitEvents(tool: ToolSpec, op: OperationRecord, now: number): LifecycleEvent[] {
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
async function refuseWithoutTool(deps: Deps, first: OperationRecord): Promise<StepOutput> {
  const outcome = {
    kind: 'failed_permanent',
    code: 'permanent_failure',
    message: `the tool ${first.toolName} is no longer registered`,
  } as const;
  const out = await advance(deps, first, (op) => {
    if (readyToAttempt(op)) {
      const inDoubt = settleFailureBy(undefined, op, op.attempts + 1);
      return { value: undefined, events: [{ type: 'refuse_attempt', outcome, ...(inDoubt ? { inDoubt } : {}) }] };
    }
    if (accepts(op, 'lose_attempt')) return { value: undefined, events: [{ type: 'lose_attempt', leaseUntil: stepLease(deps.now()) }] };
    return { value: undefined };
  });
  return stepOutput(out.op, deps.now());
}
