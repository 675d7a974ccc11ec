import { accepts } from '../core/transition-table';
import type { OperationRecord, Principal, RunRecord } from '../core/model';
import { RunChangedError, type OperationStore, type RateLimitStore, type RunStore, type WithStore } from '../core/ports';
import { advance, type AdvanceDeps } from '../steps/advance';
import { executionNameOf } from '../steps/deps';

/**
 * Cancels one operation: settles it as `cancelled` and reports that at once (the turn is closed), then
 * stops its execution. An attempt already in flight is aborted where the runtime can; whatever it
 * returns later is recorded as `result.late` and never replaces the cancelled envelope.
 */
export async function cancelOperation(
  deps: AdvanceDeps,
  op: OperationRecord,
  reason = 'cancelled by the agent',
): Promise<{ ok: boolean; op: OperationRecord }> {
  const out = await advance(deps, op, (current) => ({
    value: undefined,
    events: accepts(current, 'cancel') ? [{ type: 'cancel', reason }] : [],
  }));
  if (out.changed) await deps.lifecycle.stop(executionNameOf(out.op), reason).catch(() => undefined);
  return { ok: out.changed, op: out.op };
}

/** Closes a run: no new calls (409 run_closed), and every operation still in flight is cancelled. */
export async function cancelRun(deps: WithStore<OperationStore & RateLimitStore & RunStore>, run: RunRecord): Promise<RunRecord> {
  let closed = run;
  while (closed.status !== 'cancelled') {
    try {
      closed = await deps.store.updateRunStatus(closed, 'cancelled', [
        { type: 'run.cancelled', detail: { previousStatus: closed.status } },
      ]);
    } catch (error) {
      if (!(error instanceof RunChangedError)) throw error;
      closed = (await deps.store.getRun(run.runId)) ?? closed;
    }
  }
  const ops = await deps.store.listOperationsOfRun(run.runId);
  await Promise.all(ops.filter((o) => accepts(o, 'cancel')).map((o) => cancelOperation(deps, o, 'the run was cancelled')));
  return closed;
}

/** A reviewer settles an outcome_unknown by looking at the upstream; the decision becomes the record. */
export async function resolveOperation(
  deps: AdvanceDeps,
  op: OperationRecord,
  reviewer: Principal,
  verdict: 'succeeded' | 'failed',
  note: string,
): Promise<{ ok: boolean; op: OperationRecord }> {
  const out = await advance(deps, op, (current) => ({
    value: undefined,
    events: accepts(current, 'resolve') ? [{ type: 'resolve', verdict, by: reviewer.id, note }] : [],
  }));
  if (out.changed) await deps.lifecycle.stop(executionNameOf(out.op), 'resolved by a reviewer').catch(() => undefined);
  return { ok: out.changed, op: out.op };
}
