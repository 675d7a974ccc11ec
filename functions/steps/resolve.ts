import { envelopeFor } from '../core/envelope';
import { moveTo } from '../core/lifecycle';
import type { OperationRecord, Outcome, Principal } from '../core/model';
import { recordOutcome } from '../core/settle';
import { executionNameOf, type Deps } from './deps';
import { mutate } from './mutate';

/** A reviewer settles an outcome_unknown by looking at the upstream; the decision becomes the record. */
export async function resolveOperation(deps: Deps, op: OperationRecord, reviewer: Principal, verdict: 'succeeded' | 'failed', note: string): Promise<{ ok: boolean; op: OperationRecord }> {
  const { value, op: after } = await mutate(deps.store, op.runId, op.operationId, (_run, current) => {
    if (current.state !== 'outcome_unknown') return { value: false };
    const outcome: Outcome =
      verdict === 'succeeded'
        ? { kind: 'succeeded', result: undefined }
        : { kind: 'failed_permanent', code: 'permanent_failure', message: 'a reviewer confirmed the call did not take effect' };
    const base = { ...current, review: { required: false, reason: current.review?.reason ?? 'resolved by a reviewer', resolvedBy: reviewer.id, note }, envelope: undefined };
    const recorded = recordOutcome(base, outcome, { resolvedBy: reviewer.id });
    const envelope = { ...envelopeFor(current, outcome), ...(verdict === 'succeeded' ? { message: 'a reviewer confirmed the call succeeded' } : {}) };
    const reported = moveTo(recorded.op, 'reported', { envelope, plan: { next: 'done' }, leaseUntil: undefined });
    return {
      value: true,
      change: {
        op: reported.op,
        events: [
          { type: 'reconcile.finished', operationId: current.operationId, callId: current.callId, detail: { result: 'resolved_by_reviewer', verdict, reviewerId: reviewer.id } },
          ...recorded.events,
          ...reported.events,
          { type: 'result.reported', operationId: current.operationId, callId: current.callId, detail: { status: envelope.status } },
        ],
      },
    };
  });
  if (value) await deps.lifecycle.stop(executionNameOf(after), 'resolved by a reviewer').catch(() => undefined);
  return { ok: value, op: after };
}
