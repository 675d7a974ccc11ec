import { MAX_RECONCILE_LOOKUPS, reconcilePlanOf } from '../core/attempt-policy';
import { backoffSeconds } from '../core/backoff';
import { moveTo, resumeStep } from '../core/lifecycle';
import type { NextStep, OperationRecord } from '../core/model';
import { backoffOf, type ReconcileResult, type ToolSpec } from '../core/tool-spec';
import type { NewTraceEvent } from '../core/trace';
import { deepFreeze } from '../core/canonical';
import type { Deps } from './deps';
import { mutate, type Decision } from './mutate';
import { callTool } from './tool-call';
import type { StepOutput } from './validate';

/**
 * Settles an outcome_unknown by the tool's policy: a status lookup by idempotency key, a replay with the
 * same key, or a person. It never creates a new logical operation and never sends a new key.
 */
export async function reconcileOperation(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const tool = deps.tools.get(first.toolName);
  if (!tool || !first.frozenArguments) throw new Error(`operation ${operationId} was never validated`);
  const plan = reconcilePlanOf(tool);

  const started = await mutate(deps.store, first.runId, operationId, (_run, op) => beginReconcile(deps, op, plan));
  if (started.value !== 'reconcile') return { operationId, next: started.value };

  let lookup: { ok: true; value: ReconcileResult<unknown> } | { ok: false } | undefined;
  if (plan === 'lookup') {
    const input = deepFreeze(tool.inputSchema.parse(JSON.parse(first.frozenArguments)));
    const call = await callTool(deps, operationId, { idempotencyKey: started.op.idempotencyKey, attempt: started.op.attempts, timeoutMs: tool.timeoutMs, abortOnCancel: true }, (ctx) => tool.reconcile!(ctx, input));
    lookup = call.ok ? { ok: true, value: call.value! } : { ok: false };
  }
  const done = await mutate(deps.store, first.runId, operationId, (_run, op) => finishReconcile(deps, tool, op, plan, lookup));
  return { operationId, ...done.value };
}

function beginReconcile(deps: Deps, op: OperationRecord, plan: string): Decision<NextStep | 'reconcile'> {
  const event: NewTraceEvent = { type: 'reconcile.started', operationId: op.operationId, callId: op.callId, attempt: op.attempts, detail: { plan } };
  const lease = new Date(deps.now() + 120_000).toISOString();
  if (op.state === 'executing' && op.lastAttempt?.attempt !== op.attempts) {
    // The worker of this attempt vanished after the intent write: the request may have gone out.
    const moved = moveTo(op, 'outcome_unknown', { plan: { next: 'reconcile' }, leaseUntil: lease }, { reason: 'attempt_lost' });
    return { value: 'reconcile', change: { op: moved.op, events: [...moved.events, event] } };
  }
  if (op.state === 'outcome_unknown' && !op.review?.required && (op.plan?.next === 'reconcile' || op.plan?.next === 'reconcile_later')) {
    return { value: 'reconcile', change: { op: { ...op, leaseUntil: lease }, events: [event] } };
  }
  const step = resumeStep(op);
  return { value: step === 'validate' ? 'report' : step };
}

function finishReconcile(
  deps: Deps,
  tool: ToolSpec,
  op: OperationRecord,
  plan: 'lookup' | 'replay' | 'review',
  lookup: { ok: true; value: ReconcileResult<unknown> } | { ok: false } | undefined,
): Decision<Pick<StepOutput, 'next' | 'delaySeconds'>> {
  if (op.state !== 'outcome_unknown') return { value: { next: 'report' } };
  const now = deps.now();
  const finished = (detail: Record<string, unknown>): NewTraceEvent => ({ type: 'reconcile.finished', operationId: op.operationId, callId: op.callId, attempt: op.attempts, detail: { plan, ...detail } });
  const review = (reason: string) => ({
    value: { next: 'report' as const },
    change: { op: { ...op, review: { required: true, reason }, plan: { next: 'report' as const } }, events: [finished({ result: 'needs_review', reason })] },
  });
  const retrySameKey = (result: string) => {
    if (op.attempts >= tool.maxAttempts) return review(`${result}; no attempts left`);
    const delaySeconds = plan === 'lookup' ? 0 : backoffSeconds(op.attempts + 1, backoffOf(tool), deps.random);
    const notBefore = new Date(now + delaySeconds * 1000).toISOString();
    return {
      value: { next: 'retry' as const, delaySeconds },
      change: {
        op: { ...op, plan: { next: 'retry' as const, notBefore }, leaseUntil: new Date(now + delaySeconds * 1000 + tool.timeoutMs + 60_000).toISOString() },
        events: [finished({ result, action: 'retry_same_key' }), { type: 'backoff.scheduled' as const, operationId: op.operationId, callId: op.callId, attempt: op.attempts + 1, detail: { delaySeconds, reason: 'reconcile' } }],
      },
    };
  };

  if (plan === 'review') return review('the tool cannot be replayed safely or looked up');
  if (plan === 'replay') return retrySameKey('replay');
  if (!lookup?.ok) {
    const lookups = (op.reconcileAttempts ?? 0) + 1;
    if (lookups >= MAX_RECONCILE_LOOKUPS) return review(`status lookup failed ${lookups} times`);
    const delaySeconds = backoffSeconds(lookups + 1, backoffOf(tool), deps.random);
    return {
      value: { next: 'reconcile_later', delaySeconds },
      change: { op: { ...op, reconcileAttempts: lookups, plan: { next: 'reconcile_later', notBefore: new Date(now + delaySeconds * 1000).toISOString() }, leaseUntil: new Date(now + delaySeconds * 1000 + 120_000).toISOString() }, events: [finished({ result: 'lookup_failed', retryInSeconds: delaySeconds })] },
    };
  }
  if (!lookup.value.found) return retrySameKey('not_found');
  const parsed = tool.outputSchema.safeParse(lookup.value.result);
  if (!parsed.success) return review('the status lookup returned output that does not match the output schema');
  return {
    value: { next: 'record' },
    change: { op: { ...op, pending: { kind: 'succeeded', result: parsed.data }, plan: { next: 'record' } }, events: [finished({ result: 'found' })] },
  };
}
