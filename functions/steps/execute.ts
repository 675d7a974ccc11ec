import { decideAfterAttempt } from '../core/attempt-policy';
import { mayContinue, withClock } from '../core/budgets';
import { classifyAttempt } from '../core/classify';
import { moveTo, resumeStep } from '../core/lifecycle';
import type { NextStep, OperationRecord, Outcome, RunRecord } from '../core/model';
import { mayCallTool } from '../core/policy';
import { outcomeSummary, recordLate, recordOutcome } from '../core/settle';
import type { ToolSpec } from '../core/tool-spec';
import type { NewTraceEvent } from '../core/trace';
import { deepFreeze } from '../core/canonical';
import { principalIn, type Deps } from './deps';
import { mutate, type Decision } from './mutate';
import { callTool } from './tool-call';
import type { StepOutput } from './validate';

const LOCK_BUSY_DELAY_SECONDS = 1;
const LEASE_MARGIN_MS = 60_000;

/** May this record start an attempt now? Only when the lifecycle explicitly put it there. */
function readyToAttempt(op: OperationRecord): boolean {
  switch (op.state) {
    case 'validated':
      return !op.approvalRequired;
    case 'awaiting_approval':
      return op.approval?.state === 'approved';
    case 'executing':
      return op.plan?.next === 'retry' && op.lastAttempt?.attempt === op.attempts;
    case 'outcome_unknown':
      return op.plan?.next === 'retry';
    default:
      return false;
  }
}

/**
 * Execute's Lambda: exactly one attempt. Intent (state `executing`, attempt number, same idempotency key)
 * is committed before the network call; the attempt's outcome is committed before anything reports it.
 */
export async function executeAttempt(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const tool = deps.tools.get(first.toolName);
  if (!tool || !first.frozenArguments) throw new Error(`operation ${operationId} was never validated`);
  const input = deepFreeze(tool.inputSchema.parse(JSON.parse(first.frozenArguments)));
  const lockKey = tool.lockKey ? `${tool.name}:${tool.lockKey(input)}` : undefined;

  if (lockKey && !(await deps.store.acquireLock(lockKey, operationId, tool.timeoutMs + LEASE_MARGIN_MS, deps.now()))) {
    return lockBusy(deps, first);
  }
  try {
    const principal = principalIn(await deps.config(), first.principalId);
    const intent = await mutate(deps.store, first.runId, operationId, (run, op) => beginAttempt(deps, tool, run, op, mayCallTool(principal, tool.name)));
    if (intent.value !== 'attempt') return { operationId, next: intent.value };
    const attempt = intent.op.attempts;

    const call = await callTool(deps, operationId, { idempotencyKey: intent.op.idempotencyKey, attempt, timeoutMs: tool.timeoutMs, abortOnCancel: tool.risk === 'read' }, (ctx) => tool.execute(ctx, input));
    const outcome = classifyAttempt(tool, call.ok ? { ok: true, value: call.value } : { ok: false, thrown: call.thrown });
    const finished: NewTraceEvent = {
      type: 'attempt.finished',
      operationId,
      callId: first.callId,
      attempt,
      detail: { ...outcomeSummary(outcome), upstreamStatus: call.upstreamStatus ?? outcomeStatus(outcome) ?? null, latencyMs: call.latencyMs },
    };
    const after = await mutate(deps.store, first.runId, operationId, (_run, op) => finishAttempt(deps, tool, op, attempt, outcome, call, finished));
    return { operationId, ...after.value };
  } finally {
    if (lockKey) await deps.store.releaseLock(lockKey, operationId);
  }
}

function outcomeStatus(outcome: Outcome): number | undefined {
  return 'upstreamStatus' in outcome ? outcome.upstreamStatus : undefined;
}

type Begin = 'attempt' | NextStep;

/** Pre-attempt checks (authorization, run budget, cancellation, deadline), then the intent write. */
function beginAttempt(deps: Deps, tool: ToolSpec, run: RunRecord, op: OperationRecord, authorized: boolean): Decision<Begin> {
  if (op.state === 'executing' && op.lastAttempt?.attempt !== op.attempts) return { value: 'reconcile' };
  if (!readyToAttempt(op)) {
    const step = resumeStep(op);
    return { value: step === 'validate' || step === 'execute' ? 'report' : step };
  }
  const now = deps.now();
  const going = mayContinue(run, now);
  const stop = ((): Exclude<Outcome, { kind: 'succeeded' }> | undefined => {
    if (!authorized) return { kind: 'rejected', code: 'forbidden', message: `this principal may no longer call ${tool.name}` };
    if (!going.ok) return going.reason === 'run_closed' ? { kind: 'cancelled', code: 'cancelled', message: going.message } : { kind: 'budget_exhausted', code: 'budget_exhausted', message: going.message };
    if (op.deadlineAt && now + tool.timeoutMs > Date.parse(op.deadlineAt)) {
      return op.lastAttempt
        ? { kind: 'failed_permanent', code: 'permanent_failure', message: 'the operation reached its deadline' }
        : { kind: 'failed_permanent', code: 'permanent_failure', message: 'the operation reached its deadline before its first attempt' };
    }
    return undefined;
  })();
  if (stop) {
    if (op.state === 'outcome_unknown') {
      // An earlier attempt may have committed: nothing can be concluded, so a person decides.
      return { value: 'report', change: { op: { ...op, review: { required: true, reason: stop.message }, plan: { next: 'report' } }, events: [{ type: 'reconcile.finished', operationId: op.operationId, callId: op.callId, detail: { result: 'needs_review', reason: stop.message } }] } };
    }
    const recorded = recordOutcome(op, stop);
    const events: NewTraceEvent[] = [...recorded.events];
    let runAfter = run;
    if (stop.kind === 'budget_exhausted' && run.status === 'open') {
      runAfter = withClock(run, now);
      events.unshift({ type: 'budget.exhausted', operationId: op.operationId, callId: op.callId, detail: { reason: stop.message, status: runAfter.status } });
    }
    return { value: 'report', change: { run: runAfter, op: recorded.op, events } };
  }
  const attempt = op.attempts + 1;
  const moved = moveTo(op, 'executing', { attempts: attempt, leaseUntil: new Date(now + tool.timeoutMs + LEASE_MARGIN_MS).toISOString(), plan: { next: 'execute' } });
  return { value: 'attempt', change: { op: moved.op, events: [...moved.events, { type: 'attempt.started', operationId: op.operationId, callId: op.callId, attempt }] } };
}

/** The attempt's outcome, committed before anything reports it; a cancelled operation keeps it as late. */
function finishAttempt(
  deps: Deps,
  tool: ToolSpec,
  op: OperationRecord,
  attempt: number,
  outcome: Outcome,
  call: { latencyMs: number; upstreamStatus?: number },
  finished: NewTraceEvent,
): Decision<Pick<StepOutput, 'next' | 'delaySeconds'>> {
  const now = deps.now();
  if (op.outcome?.kind === 'cancelled') {
    if (op.lateOutcome) return { value: { next: 'done' } };
    const late = recordLate(op, outcome, attempt);
    return { value: { next: 'done' }, change: { op: late.op, events: [finished, ...late.events] } };
  }
  if (op.state !== 'executing' || op.attempts !== attempt) return { value: { next: 'report' } };
  const lastAttempt = { attempt, outcome, latencyMs: call.latencyMs, upstreamStatus: call.upstreamStatus, finishedAt: new Date(now).toISOString() };
  const decision = decideAfterAttempt(tool, op, outcome, now, deps.random);
  switch (decision.next) {
    case 'record':
      return { value: { next: 'record' }, change: { op: { ...op, lastAttempt, pending: decision.outcome, plan: { next: 'record' } }, events: [finished] } };
    case 'retry': {
      const notBefore = new Date(now + decision.delaySeconds * 1000).toISOString();
      const backoff: NewTraceEvent = { type: 'backoff.scheduled', operationId: op.operationId, callId: op.callId, attempt: attempt + 1, detail: { delaySeconds: decision.delaySeconds, reason: decision.reason, ...(outcome.kind === 'failed_retryable' && outcome.retryAfterSeconds ? { retryAfterSeconds: outcome.retryAfterSeconds } : {}) } };
      return {
        value: { next: 'retry', delaySeconds: decision.delaySeconds },
        change: { op: { ...op, lastAttempt, plan: { next: 'retry', notBefore }, leaseUntil: new Date(Date.parse(notBefore) + tool.timeoutMs + LEASE_MARGIN_MS).toISOString() }, events: [finished, backoff] },
      };
    }
    case 'reconcile': {
      const moved = moveTo(op, 'outcome_unknown', { lastAttempt, plan: { next: 'reconcile' }, leaseUntil: new Date(now + LEASE_MARGIN_MS).toISOString() });
      return { value: { next: 'reconcile' }, change: { op: moved.op, events: [finished, ...moved.events] } };
    }
  }
}

/** Another write holds the resource's lock: wait and try again, without spending an attempt. */
async function lockBusy(deps: Deps, first: OperationRecord): Promise<StepOutput> {
  const { value } = await mutate(deps.store, first.runId, first.operationId, (_run, op) => {
    if (!readyToAttempt(op)) return { value: 'report' as NextStep };
    const now = deps.now();
    const notBefore = new Date(now + LOCK_BUSY_DELAY_SECONDS * 1000).toISOString();
    const event: NewTraceEvent = { type: 'backoff.scheduled', operationId: op.operationId, callId: op.callId, attempt: op.attempts + 1, detail: { delaySeconds: LOCK_BUSY_DELAY_SECONDS, reason: 'lock_busy' } };
    const planned = op.state === 'executing' || op.state === 'outcome_unknown' ? { ...op, plan: { next: 'retry' as const, notBefore } } : op;
    return { value: 'retry' as NextStep, change: { op: { ...planned, leaseUntil: new Date(now + 60_000).toISOString() }, events: [event] } };
  });
  return { operationId: first.operationId, next: value, delaySeconds: value === 'retry' ? LOCK_BUSY_DELAY_SECONDS : undefined };
}
