import { finishReconcileEvents, type Lookup, reconcilePlanOf, reconcileStart, type ReconcilePlan } from '../core/attempt-protocol';
import { waitOutput } from '../core/next-step';
import { RECONCILE_LEASE_MS } from '../core/leases';
import { checkOutput } from '../core/classify';
import type { OperationRecord } from '../core/model';
import type { LockStore, OperationStore, RateLimitStore, WithStore } from '../core/ports';
import type { ReconcileResult, ToolSpec } from '../core/tool-spec';
import { advance, mustGet } from './advance';
import { lockKeyOf, releaseLockIfSettled, renewLock } from './locks';
import { placeResult } from './results';
import { leftAt, type StepResult } from './step-result';
import { callTool, frozenInput, toolCode } from './tool-call';

/**
 * Reconcile's Lambda: settles an outcome_unknown by the tool's policy: a status lookup by idempotency key, a
 * replay with the same key, or a person. It never creates a new logical operation and never sends a new key.
 * Whether to wait, defer or presume the attempt lost, and what the lookup established, is core/attempt-protocol.ts's call.
 */
export async function reconcileOutcome(
  deps: WithStore<OperationStore & LockStore & RateLimitStore>,
  operationId: string,
): Promise<StepResult> {
  const first = await mustGet(deps, operationId);
  const tool = deps.tools.get(first.toolName);
  const plan: ReconcilePlan = tool && first.frozenArguments ? reconcilePlanOf(tool) : 'review';
  const started = await advance(deps, first, (op) => reconcileStart(op, tool, plan, deps.now()));
  if (typeof started.value === 'object') return { output: waitOutput(started.op, started.value.waitMs / 1000), op: started.op };
  if (!started.value) return leftAt(started.op, deps.now());

  let lookup: Lookup | undefined;
  if (plan === 'lookup' && tool) {
    const input = frozenInput(deps, tool, first.frozenArguments!);
    const key = await lockKeyOf(deps, first, tool);
    if (key) await renewLock(deps, key, operationId, RECONCILE_LEASE_MS);
    const call = await callTool(
      deps,
      operationId,
      { idempotencyKey: started.op.idempotencyKey, attempt: started.op.attempts, timeoutMs: tool.timeoutMs, abortOnCancel: true },
      toolCode(deps, tool, 'reconcile', { operationId, frozenArguments: first.frozenArguments!, input }),
    );
    lookup = call.ok ? await lookupFinding(deps, tool, started.op, call.value as ReconcileResult<unknown>) : { ok: false };
  }
  const done = await advance(deps, started.op, (op) => ({
    value: undefined,
    events: finishReconcileEvents(tool, op, plan, lookup, deps.now(), deps.random),
  }));
  await releaseLockIfSettled(deps, await lockKeyOf(deps, done.op, tool), done.op);
  return leftAt(done.op, deps.now());
}

async function lookupFinding(
  deps: Parameters<typeof placeResult>[0],
  tool: ToolSpec,
  op: OperationRecord,
  answer: ReconcileResult<unknown>,
): Promise<Lookup> {
  if (!answer?.found) return { ok: true, found: false };
  const checked = checkOutput(tool, answer.result);
  return { ok: true, found: true, outcome: await placeResult(deps, tool, op.operationId, `${op.attempts}-lookup`, checked) };
}
