import { MAX_RECONCILE_LOOKUPS, reconcilePlanOf, type ReconcilePlan } from '../core/attempt-policy';
import { backoffSeconds, lockWaitSeconds } from '../core/backoff';
import { deepFreeze } from '../core/canonical';
import { accepts } from '../core/transition-table';
import { stepOutput, type StepOutput, waitOutput } from '../core/next-step';
import type { ReconcileFinding } from '../core/lifecycle-events';
import { attemptLease, RECONCILE_LEASE_MS, reconcileLease } from '../core/leases';
import { checkOutput } from '../core/classify';
import type { OperationRecord, Outcome } from '../core/model';
import type { Deps } from '../core/ports';
import { senderLeaseLeftMs } from '../core/record-predicates';
import { backoffOf, type ReconcileResult, type ToolSpec } from '../core/tool-spec';
import { advance, mustGet } from './advance';
import { lockKeyOf, releaseLockIfSettled, renewLock } from './locks';
import { placeResult } from './results';
import { callTool, toolCode } from './tool-call';

/**
 * Settles an outcome_unknown by the tool's policy: a status lookup by idempotency key, a replay with the
 * same key, or a person. It never creates a new logical operation and never sends a new key.
 */
export async function reconcileStep(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await mustGet(deps, operationId);
  const tool = deps.tools.get(first.toolName);
  const plan: ReconcilePlan = tool && first.frozenArguments ? reconcilePlanOf(tool) : 'review';
  const lease = () => reconcileLease(deps.now());
  // Step Functions reaches Reconcile when an Execute task failed. That may be a second delivery of it, throttled
  // before it ran, while the first still sends the attempt: a worker within its lease is waited for, and an
  // attempt no worker has taken yet goes back to Execute after a recorded backoff (Execute was throttled past the
  // ASL's retries; going back at once would only spend invocations and transitions on the same throttle). Only an
  // attempt whose worker is gone is presumed lost.
  const started = await advance<boolean | { waitMs: number }>(deps, first, (op) => {
    if (accepts(op, 'lose_attempt')) {
      if (op.attemptClaimed === false) {
        const delaySeconds = lockWaitSeconds(op.throttleWaits ?? 0);
        const leaseUntil = attemptLease(deps.now(), tool?.timeoutMs ?? 0, delaySeconds);
        return { value: false, events: [{ type: 'defer_attempt', delaySeconds, leaseUntil }] };
      }
      const waitMs = senderLeaseLeftMs(op, deps.now());
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
  });
  if (typeof started.value === 'object') return waitOutput(started.op, started.value.waitMs / 1000);
  if (!started.value) return stepOutput(started.op, deps.now());

  let lookup: Lookup | undefined;
  if (plan === 'lookup' && tool) {
    const input = deepFreeze(tool.inputSchema.parse(JSON.parse(first.frozenArguments!)));
    const key = lockKeyOf(tool, input);
    if (key) await renewLock(deps, key, operationId, RECONCILE_LEASE_MS);
    const call = await callTool(
      deps,
      operationId,
      { idempotencyKey: started.op.idempotencyKey, attempt: started.op.attempts, timeoutMs: tool.timeoutMs, abortOnCancel: true },
      toolCode(deps, tool, 'reconcile', { operationId, frozenArguments: first.frozenArguments!, input }),
    );
    lookup = call.ok ? await lookupFinding(deps, tool, started.op, call.value as ReconcileResult<unknown>) : { ok: false };
  }
  const done = await advance(deps, started.op, (op) => {
    if (!accepts(op, 'finish_reconcile')) return { value: undefined };
    const finding = findingOf(deps, tool, op, plan, lookup);
    return { value: undefined, events: [{ type: 'finish_reconcile', plan, finding, leaseUntil: leaseAfter(deps, tool, finding) }] };
  });
  if (tool && done.op.frozenArguments) await releaseLockIfSettled(deps, lockKeyOf(tool, JSON.parse(done.op.frozenArguments)), done.op);
  return stepOutput(done.op, deps.now());
}

/** What a status lookup answered: nothing found, or what was found, checked and recorded as an attempt's output is. */
type Lookup = { ok: true; found: false } | { ok: true; found: true; outcome: Outcome } | { ok: false };

async function lookupFinding(deps: Deps, tool: ToolSpec, op: OperationRecord, answer: ReconcileResult<unknown>): Promise<Lookup> {
  if (!answer?.found) return { ok: true, found: false };
  const checked = checkOutput(tool, answer.result);
  return { ok: true, found: true, outcome: await placeResult(deps, tool, op.operationId, `${op.attempts}-lookup`, checked) };
}

/** What the reconciliation established, decided here once from the tool's policy and what the lookup said. */
function findingOf(
  deps: Deps,
  tool: ToolSpec | undefined,
  op: OperationRecord,
  plan: ReconcilePlan,
  lookup: Lookup | undefined,
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
  if (plan === 'replay') return retrySameKey(backoffSeconds(op.attempts + 1, backoffOf(tool), deps.random));
  if (!lookup?.ok) {
    const lookups = (op.reconcileAttempts ?? 0) + 1;
    return {
      result: 'lookup_failed',
      retryInSeconds: lookups >= MAX_RECONCILE_LOOKUPS ? undefined : backoffSeconds(lookups + 1, backoffOf(tool), deps.random),
    };
  }
  if (!lookup.found) {
    const sendsAgain = op.outcome?.kind !== 'cancelled' && !op.failureToConfirm && op.attempts < tool.maxAttempts;
    if (sendsAgain) return retrySameKey(0);
    // Nothing found and nothing sent again: conclusive only once the request last given up on has had as
    // long again as the tool's timeout to land (it may have been overtaken on its way).
    const tooSoonMs = op.lastUnansweredAt ? Date.parse(op.lastUnansweredAt) + tool.timeoutMs - deps.now() : 0;
    return { result: 'not_found', retry: undefined, ...(tooSoonMs > 0 ? { lookAgainInSeconds: Math.ceil(tooSoonMs / 1000) } : {}) };
  }
  if (lookup.outcome.kind !== 'succeeded')
    return {
      result: 'needs_review',
      reason: `the status lookup found the effect, but ${'message' in lookup.outcome ? lookup.outcome.message : 'its answer is invalid'}`,
    };
  return { result: 'found', outcome: lookup.outcome };
}

function leaseAfter(deps: Deps, tool: ToolSpec | undefined, finding: ReconcileFinding): string {
  const waitSeconds =
    finding.result === 'not_found'
      ? (finding.retry?.delaySeconds ?? finding.lookAgainInSeconds ?? 0)
      : finding.result === 'lookup_failed'
        ? (finding.retryInSeconds ?? 0)
        : 0;
  return reconcileLease(deps.now(), waitSeconds, tool?.timeoutMs);
}
