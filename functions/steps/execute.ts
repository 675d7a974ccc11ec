import { finishAttemptEvents, lockWaitEvents, outlastsExecution, planAttempt, withoutToolEvents } from '../core/attempt-protocol';
import { classifyAttempt } from '../core/classify';
import { readyToAttempt } from '../core/transition-table';
import { waitOutput } from '../core/next-step';
import { attemptLockMs } from '../core/leases';
import type { OperationRecord, RunRecord } from '../core/model';
import { recheckCall } from '../core/call-policy';
import { decidingPrincipal } from '../core/policy';
import type { LockStore, OperationStore, RateLimitStore, RunStore, WithStore } from '../core/ports';
import { requesterOf } from '../core/record-predicates';
import type { ToolSpec } from '../core/tool-spec';
import { advance, mustGet } from './advance';
import { lockKeyOf, releaseLockIfSettled, renewLock } from './locks';
import { leftAt, type StepResult } from './step-result';
import { tracedAttempt } from './telemetry';
import { placeResult } from './results';
import { callTool, frozenInput, toolCode } from './tool-call';

/** The store roles an attempt uses: the operation, its run (the re-check), the tool's lock, the rate slots it frees. */
export type ExecuteDeps = WithStore<OperationStore & RunStore & LockStore & RateLimitStore>;

/**
 * Execute's Lambda (and the submitting API's first attempt): exactly one attempt. Its intent (state
 * `executing`, attempt number, same idempotency key) is committed before the network call, by this step or,
 * for replay-safe tools, with the submission; its outcome is committed before anything reports it. Whether
 * to send, wait, hand off or presume lost is core/attempt-protocol.ts's call. `known`: the record as its
 * caller just wrote it (the submission running the attempt itself), which saves a read; a stale one only
 * costs a conditional write's retry. `holdsIntent`: the caller recorded the first attempt's intent and sends
 * it itself (the submitting API). `mustEndBy`: when the execution running this step ends (an Express one:
 * five minutes after it started); an attempt that could outlast it is not begun here but handed to the
 * Standard machine.
 */
export async function executeAttempt(
  deps: ExecuteDeps,
  operationId: string,
  known?: OperationRecord,
  holdsIntent = false,
  mustEndBy?: number,
): Promise<StepResult> {
  const first = known?.operationId === operationId ? known : await mustGet(deps, operationId);
  const tool = deps.tools.get(first.toolName);
  if (!tool || !first.frozenArguments) return refuseWithoutTool(deps, first);
  const input = frozenInput(deps, tool, first.frozenArguments);
  const lockKey = await lockKeyOf(deps, first, tool);

  if (lockKey && !(await renewLock(deps, lockKey, operationId, attemptLockMs(tool.timeoutMs)))) {
    const busy = await advance(deps, first, (op) => ({ value: undefined, events: lockWaitEvents(tool, op, deps.now()) }));
    return leftAt(busy.op, deps.now());
  }

  // A fresh attempt re-checks authorization and the run first (permissions can change while an approval waits).
  const checks = readyToAttempt(first) ? await preAttemptContext(deps, first, tool, input) : undefined;
  const tooLate = outlastsExecution(tool, deps.now(), mustEndBy);
  const begun = await advance(deps, first, (op) => planAttempt(op, { tool, now: deps.now(), holdsIntent, tooLate, checks }));
  if (begun.value.kind === 'wait') return { output: waitOutput(begun.op, begun.value.seconds), op: begun.op };
  if (begun.value.kind === 'handoff') {
    const handed = leftAt(begun.op, deps.now());
    return { ...handed, output: { ...handed.output, handoff: true } };
  }
  if (begun.value.kind === 'route') {
    await releaseLockIfSettled(deps, lockKey, begun.op);
    return leftAt(begun.op, deps.now());
  }
  const attempt = begun.value.attempt;
  const { call, outcome } = await tracedAttempt(
    deps,
    tool,
    begun.op,
    attempt,
    async () => {
      const call = await callTool(
        deps,
        operationId,
        { idempotencyKey: begun.op.idempotencyKey, attempt, timeoutMs: tool.timeoutMs, abortOnCancel: tool.risk === 'read' },
        toolCode(deps, tool, 'execute', { operationId, frozenArguments: first.frozenArguments!, input }),
      );
      const classified = classifyAttempt(tool, call.ok ? { ok: true, value: call.value } : { ok: false, thrown: call.thrown });
      return { call, outcome: await placeResult(deps, tool, operationId, String(attempt), classified) };
    },
    checks?.run,
  );
  const answer = { attempt, outcome, latencyMs: call.latencyMs, upstreamStatus: call.upstreamStatus };
  const finished = await advance(deps, begun.op, (op) => ({
    value: undefined,
    events: finishAttemptEvents(tool, op, answer, deps.now(), deps.random),
  }));
  await releaseLockIfSettled(deps, lockKey, finished.op);
  return leftAt(finished.op, deps.now());
}

/** The run as it is now, and why the call may no longer go on if it may not (roles, tool list, the policies again). */
async function preAttemptContext(
  deps: WithStore<RunStore>,
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

/** The tool is gone from the registry (a redeploy without it): no attempt can start; an unknown one goes to a person. */
async function refuseWithoutTool(deps: ExecuteDeps, first: OperationRecord): Promise<StepResult> {
  const out = await advance(deps, first, (op) => ({ value: undefined, events: withoutToolEvents(op, first.toolName, deps.now()) }));
  return leftAt(out.op, deps.now());
}
