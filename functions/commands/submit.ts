import { type Admission, admitCall, DEFAULT_BUDGETS, frozenCallKey } from '../core/budgets';
import { argumentsHash, decideCall, loopDetected, validationOf } from '../core/call-policy';
import { parseArguments } from '../core/canonical';
import { propose, transitionAll, type Proposal } from '../core/engine';
import { stepOutput } from '../core/next-step';
import type { LifecycleEvent, Validation } from '../core/lifecycle-events';
import { newIdempotencyKey, newRunId, operationIdFor } from '../core/ids';
import { attemptLease, stepLease } from '../core/leases';
import { SCHEMA_VERSION, type Budgets, type OperationRecord, type Principal, type RunRecord } from '../core/model';
import { intentAtSubmission, submitterSendsFirstAttempt } from '../core/attempt-protocol';
import {
  ContentionError,
  OperationExistsError,
  RunChangedError,
  type Deps,
  type RunChange,
  type RunStore,
  type WithStore,
} from '../core/ports';
import { decidingPrincipal, requesterGrantOf } from '../core/policy';
import { type ToolSpec, toolsReady } from '../core/tool-spec';
import type { NewTraceEvent } from '../core/trace';
import { jitter } from '../steps/advance';
import { countTrace } from '../steps/metrics';
import { executionNameOf } from '../steps/deps';
import { executeAttempt } from '../steps/execute';
import { rateGate, type Throttled } from './rate-limit-gate';
import { checkCallArguments } from './argument-check';
import { defaultLog } from '../core/log';
import { rollUpReport } from '../steps/rollups';
import type { SpendTake } from '../core/spend-limits';
import { withSpendLimits } from './spend-admission';
import { tellThresholds } from './budget-thresholds';

/**
 * How long after its wall-clock deadline a run, its operations and its trace are kept, unless configured: a
 * week, which holds the default bill at most $10 per million calls (`npm run cost`; each day more adds about
 * $0.04 per million calls); `retentionDays` keeps them longer.
 */
export const DEFAULT_RETENTION_DAYS = 7;

export async function createRun(
  deps: WithStore<RunStore>,
  principal: Principal,
  budgets: Partial<Budgets> | undefined,
  metadata?: Record<string, unknown>,
): Promise<RunRecord> {
  const now = deps.now();
  const config = await deps.config();
  const merged = { ...DEFAULT_BUDGETS, ...budgets };
  const deadline = now + merged.maxWallClockSeconds * 1000;
  const retentionDays = config.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const run: RunRecord = {
    schemaVersion: SCHEMA_VERSION,
    runId: newRunId(),
    principalId: principal.id,
    status: 'open',
    budgets: merged,
    usage: { turns: 0, toolCalls: 0, spendCents: 0 },
    lastTurn: 0,
    // The loop fuse's counts live in the run (conditional writes update one entry of this map).
    ...(merged.maxIdenticalCalls !== undefined ? { identicalCalls: {} } : {}),
    metadata,
    createdAt: new Date(now).toISOString(),
    updatedAt: new Date(now).toISOString(),
    deadlineAt: new Date(deadline).toISOString(),
    expiresAtEpoch: Math.ceil(deadline / 1000) + retentionDays * 86400,
  };
  await deps.store.putNewRun(run);
  return run;
}

export interface ToolCallRequest {
  callId: string;
  turn: number;
  name: string;
  arguments: unknown;
}

/** What the request carried besides the call: the caller's trace context (validated at the API) and how long it waits. */
export interface SubmitContext {
  traceparent?: string;
  /** `Prefer: wait=N`: a call that waits runs synchronously where an Express machine exists. */
  waitSeconds?: number;
}

export type SubmitResult =
  | {
      kind: 'created';
      op: OperationRecord;
      /**
       * Resolves when a synchronous (Express) execution ends: with the record the attempt returned, where this
       * process ran it and it settled the operation; otherwise undefined (the record says the rest).
       */
      finished?: Promise<OperationRecord | undefined>;
      /** This process runs the first attempt itself: a wait for `finished` is work, not an idle wait. */
      inline?: true;
    }
  | { kind: 'replayed'; op: OperationRecord }
  | { kind: 'conflict' }
  | { kind: 'run_closed' }
  /** Over a rate limit (config `rateLimits`): nothing created, no budget used (HTTP 429 `throttled`). */
  | Throttled;

/**
 * Records the model's proposal, its policy decision and its admission against the run's budgets in one
 * atomic write, then starts its lifecycle. The operation id is derived from (runId, callId), so concurrent
 * duplicates race on one conditional put and exactly one wins; the others become replays.
 */
export async function submitToolCall(
  deps: Deps,
  run: RunRecord,
  caller: Principal,
  call: ToolCallRequest,
  context: SubmitContext = {},
): Promise<SubmitResult> {
  const parsed = parseArguments(call.arguments);
  const inputHash = argumentsHash(parsed, call.arguments);
  const operationId = operationIdFor(run.runId, call.callId);
  // The registry first: the policies' schema is built from the tools it holds.
  const [config] = await Promise.all([deps.config(), toolsReady(deps.tools)]);
  const policy = await deps.policies?.(config);
  const tool = deps.tools.get(call.name);
  const principal = decidingPrincipal(config, caller.id, caller);
  // The tool's own answers (arguments, cost, approval, lock, approval lines): asked once, kept with the operation.
  const checked = await checkCallArguments(deps, tool, principal, parsed);
  let current = run;
  const rate = rateGate(deps, config.rateLimits, { tool: call.name, principal: caller.id }, operationId);
  // No read first: the conditional create says whether the operation exists, and hands it back if so.
  let existing: OperationRecord | undefined;
  for (let round = 0; ; round++) {
    if (existing) return answerDuplicate(deps, run, existing, caller, call, inputHash);
    const now = deps.now();
    const validation = validationOf(
      decideCall({
        toolName: call.name,
        tool,
        principal,
        arguments: parsed,
        approvalTtlSeconds: config.approvalTtlSeconds,
        now,
        policy,
        run: current,
        checked,
      }),
    );
    const allowed = validation.decision === 'allow' ? validation : undefined;
    // Only calls validation allowed count towards the loop fuse, as frozen (and a replay never gets here).
    const fuseKey = allowed && frozenCallKey(call.name, allowed.frozenArguments);
    const { admission, takes } = await withSpendLimits(
      deps,
      config.spendLimits,
      current,
      admitCall(current, call.turn, allowed?.costCents ?? 0, now, fuseKey),
      allowed?.costCents ?? 0,
      now,
    );
    if (!admission.admitted && admission.reason === 'run_closed') {
      // A closed run still answers a replay of a call it had taken.
      existing = await deps.store.getOperation(operationId);
      if (existing) continue;
      return { kind: 'run_closed' };
    }
    // Only a call that would be admitted counts against the rate limits; a replay never does.
    const limited = await rate.take(admission.admitted && allowed !== undefined, allowed?.deadlineAt, allowed?.approvalRequired === true);
    if (limited?.kind === 'throttled') return limited;
    if (limited) {
      existing = limited.op;
      continue;
    }

    const proposed = propose(proposalOf(current, caller, call, operationId, inputHash, context), now);
    const first = firstChange(
      current,
      admission,
      validation,
      tool,
      proposed.op,
      now,
      sendsFirstAttempt(deps, tool, context.waitSeconds ?? 0),
      takes,
    );
    const settled = transitionAll(proposed.op, first.steps, now);
    const slots = rate.slots();
    const events = [...proposed.events, ...first.runEvents, ...settled.events];
    try {
      const created = await deps.store.createOperation({
        run: current,
        runChange: first.runChange,
        // A token principal is in no config: the re-check before each attempt decides with what it was granted now.
        op: { ...settled.op, ...requesterGrantOf(caller), ...(slots ? { rateSlots: slots } : {}) },
        events,
      });
      deps.recentRuns?.remember('run' in admission ? admission.run : current);
      countTrace(deps, created.op.toolName, created.events);
      await rollUpReport(deps, undefined, created.op);
      if (first.runChange.kind === 'admit' && allowed?.costCents) await tellThresholds(deps, current, takes);
      return {
        kind: 'created',
        op: created.op,
        ...(await startLifecycle(deps, created.op, config.approvalTtlSeconds, context.waitSeconds ?? 0)),
      };
    } catch (error) {
      if (error instanceof OperationExistsError) {
        await rate.giveBack();
        existing = error.current ?? (await deps.store.getOperation(operationId));
        continue;
      }
      if (error instanceof RunChangedError || error instanceof ContentionError) {
        if (error instanceof ContentionError) await jitter(round);
        current = (await deps.store.getRun(run.runId)) ?? current;
        deps.recentRuns?.remember(current);
        continue;
      }
      throw error;
    }
  }
}

/**
 * Starts the operation's first execution where it enters the lifecycle (the Route state, with the step the
 * submission decided). A call that needs no person runs on the Express machine, synchronously when the
 * caller waits for it; anything else, and everything where no Express machine exists, on Standard.
 */
async function startLifecycle(
  deps: Deps,
  op: OperationRecord,
  approvalTtlSeconds: number,
  waitSeconds: number,
): Promise<{ finished?: Promise<OperationRecord | undefined>; inline?: true }> {
  const input = stepOutput(op, deps.now(), approvalTtlSeconds);
  if (input.next === 'done') return {};
  const name = executionNameOf(op);
  if (input.next !== 'execute') {
    await deps.lifecycle.start(input, name, 'standard');
    return {};
  }
  if (waitSeconds > 0 && deps.lifecycle.startSync) {
    // Not awaited here: the request waits for it only as long as the caller asked to (Prefer: wait).
    const deadline = deps.now() + waitSeconds * 1000;
    const tool = deps.tools.get(op.toolName);
    if (sendsFirstAttempt(deps, tool, waitSeconds)) return { finished: executeInline(deps, op, name, deadline), inline: true };
    return { finished: runSynchronously(deps, input, name, op) };
  }
  await deps.lifecycle.start(input, name, 'express');
  return {};
}

/** Whether a call of this tool, submitted with this wait, would have its first attempt run by the submitting process. */
export function runsFirstAttemptInline(deps: Deps, toolName: string, waitSeconds: number): boolean {
  return sendsFirstAttempt(deps, deps.tools.get(toolName), waitSeconds);
}

/** Whether this process runs the first attempt itself (core/attempt-protocol.ts), where this deployment can wait synchronously. */
function sendsFirstAttempt(deps: Pick<Deps, 'lifecycle'>, tool: ToolSpec | undefined, waitSeconds: number): tool is ToolSpec {
  return submitterSendsFirstAttempt(tool, waitSeconds, Boolean(deps.lifecycle.startSync));
}

/**
 * The Execute step in this process, then whatever the record says comes next (a retry's backoff, a
 * reconciliation, a report) on the Express machine, synchronously while the caller still waits. A process
 * that dies here leaves the operation to its lease, as a lost execution does: the sweeper resumes it.
 * Settled here, it resolves with the record the attempt left: the waiting request answers from it instead
 * of reading it back.
 */
async function executeInline(deps: Deps, op: OperationRecord, name: string, deadline: number): Promise<OperationRecord | undefined> {
  try {
    const { output, op: left } = await executeAttempt(deps, op.operationId, op, true);
    if (output.next === 'done') return left;
    if (deps.lifecycle.startSync && deps.now() < deadline) await runSynchronously(deps, output, name, op);
    else await deps.lifecycle.start(output, name, 'express');
  } catch (error) {
    warn('the attempt in the submitting process failed; the sweeper resumes the operation past its lease', op, error as Error);
  }
  return undefined;
}

/** An Express execution, awaited: the caller learns the outcome when it ends (from the record). */
function runSynchronously(deps: Deps, input: { operationId: string; next: string }, name: string, op: OperationRecord): Promise<undefined> {
  return (deps.lifecycle.startSync?.(input, name) ?? Promise.resolve()).then(
    () => undefined,
    (error: Error) => {
      warn('synchronous execution failed to start or finish', op, error);
      return undefined;
    },
  );
}

function warn(message: string, op: OperationRecord, error: Error): void {
  defaultLog().warn(message, { operationId: op.operationId, error: error.message });
}

/** The same call again is a replay of the operation it made; the same call id with other arguments, a conflict. */
async function answerDuplicate(
  deps: Deps,
  run: RunRecord,
  existing: OperationRecord,
  caller: Principal,
  call: ToolCallRequest,
  inputHash: string,
): Promise<SubmitResult> {
  if (existing.inputHash !== inputHash || existing.toolName !== call.name) {
    await traceDuplicate(deps, run, existing, {
      type: 'call.conflict',
      detail: {
        toolName: call.name,
        storedToolName: existing.toolName,
        storedInputHash: existing.inputHash,
        submittedInputHash: inputHash,
        requestedBy: caller.id,
      },
    });
    return { kind: 'conflict' };
  }
  await traceDuplicate(deps, run, existing, {
    type: 'operation.replayed',
    detail: { inputHash, state: existing.state, requestedBy: caller.id },
  });
  return { kind: 'replayed', op: existing };
}

/** A duplicate changes no record, but the trace tells it: the operator sees every replay and refused conflict. */
async function traceDuplicate(
  deps: Deps,
  run: RunRecord,
  existing: OperationRecord,
  event: Pick<NewTraceEvent, 'type' | 'detail'>,
): Promise<void> {
  const events = await deps.store.appendRunEvents(
    run.runId,
    [{ ...event, operationId: existing.operationId, callId: existing.callId }],
    existing.expiresAtEpoch ?? run.expiresAtEpoch,
  );
  countTrace(deps, existing.toolName, events);
}

/** The lifecycle's first events for a submitted call, and what its admission changes in the run. */
function firstChange(
  run: RunRecord,
  admission: Exclude<Admission, { reason: 'run_closed' }>,
  validation: Validation,
  tool: ToolSpec | undefined,
  op: Pick<OperationRecord, 'operationId' | 'callId'>,
  now: number,
  sendsItself: boolean,
  takes: SpendTake[],
): { steps: LifecycleEvent[]; runEvents: NewTraceEvent[]; runChange: RunChange } {
  if (!admission.admitted && admission.reason === 'spend_limit') {
    // Over the principal's spend limit: an envelope the model reads, the run open (the limit resets).
    const steps: LifecycleEvent[] = [{ type: 'exhaust_budget', message: admission.message, code: 'spend_limit' }, { type: 'report' }];
    return { steps, runEvents: [], runChange: { kind: 'none' } };
  }
  if (!admission.admitted && admission.reason === 'loop_detected') {
    // The loop fuse: refused like a policy refusal (an envelope the model reads), the run untouched.
    return {
      steps: [
        { type: 'validate', validation: validationOf(loopDetected(admission.message)), leaseUntil: stepLease(now) },
        { type: 'report' },
      ],
      runEvents: [],
      runChange: { kind: 'none' },
    };
  }
  if (!admission.admitted) {
    // Exhausted: the operation still exists and settles at once, so the model gets an envelope saying why.
    const steps: LifecycleEvent[] = [{ type: 'exhaust_budget', message: admission.message }, { type: 'report' }];
    if (run.status !== 'open') return { steps, runEvents: [], runChange: { kind: 'none' } };
    return {
      steps,
      runEvents: [
        {
          type: 'budget.exhausted',
          operationId: op.operationId,
          callId: op.callId,
          detail: { reason: admission.message, status: admission.run.status },
        },
      ],
      runChange: { kind: 'close', to: admission.run.status as 'budget_exhausted' | 'expired' },
    };
  }
  const lease = tool ? attemptLease(now, tool.timeoutMs) : stepLease(now);
  const steps: LifecycleEvent[] = [{ type: 'validate', validation, leaseUntil: lease }];
  if (validation.decision === 'deny') steps.push({ type: 'report' });
  else if (!validation.approvalRequired && tool && intentAtSubmission(tool))
    steps.push({ type: 'start_attempt', leaseUntil: lease, unclaimed: !sendsItself });
  return { steps, runEvents: [], runChange: { kind: 'admit', delta: admission.delta, now, ...(takes.length ? { spend: takes } : {}) } };
}

function proposalOf(
  run: RunRecord,
  caller: Principal,
  call: ToolCallRequest,
  operationId: string,
  inputHash: string,
  context: SubmitContext,
): Proposal {
  return {
    operationId,
    runId: run.runId,
    callId: call.callId,
    turn: call.turn,
    toolName: call.name,
    principalId: run.principalId,
    requestedBy: caller.id,
    // Kept as the JSON text the model sent: the store takes it whatever the tool's schema would allow.
    rawArguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    inputHash,
    idempotencyKey: newIdempotencyKey(),
    expiresAtEpoch: run.expiresAtEpoch,
    traceparent: context.traceparent,
  };
}
