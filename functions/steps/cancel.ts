import { envelopeFor } from '../core/envelope';
import { CANCELLABLE, moveTo } from '../core/lifecycle';
import type { OperationRecord, RunRecord } from '../core/model';
import { recordOutcome } from '../core/settle';
import type { NewTraceEvent } from '../core/trace';
import { executionNameOf, type Deps } from './deps';
import { mutate } from './mutate';

/**
 * Cancels one operation: settles it as `cancelled` and reports that at once (the turn is closed), then
 * stops its execution. An attempt already in flight is aborted where the runtime can; whatever it
 * returns later is recorded as `result.late` and never replaces the cancelled envelope.
 */
export async function cancelOperation(deps: Deps, op: OperationRecord, reason = 'cancelled by the agent'): Promise<{ ok: boolean; op: OperationRecord }> {
  const { value, op: after } = await mutate(deps.store, op.runId, op.operationId, (_run, current) => {
    if (!CANCELLABLE.includes(current.state)) return { value: false };
    const change = cancelledChange(current, reason);
    return { value: true, change: { op: change.op, events: change.events } };
  });
  if (value) await deps.lifecycle.stop(executionNameOf(after), reason).catch(() => undefined);
  return { ok: value, op: after };
}

function cancelledChange(op: OperationRecord, message: string): { op: OperationRecord; events: NewTraceEvent[] } {
  const outcome = { kind: 'cancelled', code: 'cancelled', message } as const;
  const recorded = recordOutcome({ ...op, approvalTaskToken: undefined }, outcome);
  const envelope = envelopeFor(op, outcome);
  const reported = moveTo(recorded.op, 'reported', { envelope, plan: { next: 'done' }, leaseUntil: undefined });
  return {
    op: reported.op,
    events: [...recorded.events, ...reported.events, { type: 'result.reported', operationId: op.operationId, callId: op.callId, detail: { status: 'cancelled' } }],
  };
}

/** Closes a run: no new calls (409 run_closed), and every operation still in flight is cancelled. */
export async function cancelRun(deps: Deps, run: RunRecord): Promise<RunRecord> {
  let closed = run;
  if (run.status !== 'cancelled') {
    for (let round = 0; round < 50; round++) {
      const current = (await deps.store.getRun(run.runId))!;
      if (current.status === 'cancelled') {
        closed = current;
        break;
      }
      try {
        const out = await deps.store.commit({
          run: { before: current, after: { ...current, status: 'cancelled' } },
          events: [{ type: 'run.cancelled', detail: { previousStatus: current.status } }],
        });
        closed = out.run;
        break;
      } catch (error) {
        if ((error as Error).name !== 'RunConflictError') throw error;
      }
    }
  }
  const ops = await deps.store.listOperationsOfRun(run.runId);
  await Promise.all(ops.filter((o) => CANCELLABLE.includes(o.state)).map((o) => cancelOperation(deps, o, 'the run was cancelled')));
  return closed;
}
