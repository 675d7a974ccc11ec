import { accepts } from '../core/transition-table';
import { transition, transitionAll } from '../core/engine';
import type { Transition } from '../core/lifecycle-events';
import type { OperationRecord } from '../core/model';
import type { Decision } from '../core/attempt-protocol';
import { ContentionError, OperationConflictError, type OperationStore, type RateLimitStore, type WithStore } from '../core/ports';
import type { TraceEvent } from '../core/trace';
import { countTrace } from './metrics';
import { freeRateSlotsIfSettled } from './rate-slots';
import { logOf } from '../core/log';
import { rollUpReport } from './rollups';

/** What `decide` says from the record read: lifecycle events to apply (none means the record stays as it is). */
export type Decided<T> = Decision<T>;

/** The store roles a step's writes use: the operation, and the rate slots a settling write frees. */
export type AdvanceDeps = WithStore<OperationStore & RateLimitStore>;

export interface Advanced<T> {
  value: T;
  op: OperationRecord;
  changed: boolean;
  events: TraceEvent[];
}

/**
 * The one step runner: reads the operation, lets `decide` say what happened (as lifecycle events) from
 * what it read, applies them through the engine and writes the result conditionally on the version read.
 * On a conflict it decides again from what is there now. It never gives up: a conflict means another
 * writer moved the operation on, and contention on a shared item is waited out with jittered backoff.
 */
export async function advance<T>(
  deps: AdvanceDeps,
  start: OperationRecord | string,
  decide: (op: OperationRecord) => Decided<T>,
): Promise<Advanced<T>> {
  let op = typeof start === 'string' ? await mustGet(deps, start) : start;
  for (let round = 0; ; round++) {
    const decided = decide(op);
    if (!decided.events?.length) return { value: decided.value, op, changed: false, events: [] };
    const next = withReport(transitionAll(op, decided.events, deps.now()), deps.now());
    try {
      const out = await deps.store.updateOperation(op, next.op, next.events);
      if (!op.review?.required && out.op.review?.required) await tellReviewers(deps, out.op);
      if (!op.envelope && out.op.envelope && out.op.approval?.slackMessages?.length) await tellSettled(deps, out.op);
      await freeRateSlotsIfSettled(deps, op, out.op);
      countTrace(deps, out.op.toolName, out.events);
      await rollUpReport(deps, op, out.op);
      return { value: decided.value, op: out.op, changed: true, events: out.events };
    } catch (error) {
      if (error instanceof OperationConflictError) {
        op = error.current ?? (await mustGet(deps, op.operationId));
        continue;
      }
      if (error instanceof ContentionError) {
        await jitter(round);
        op = await mustGet(deps, op.operationId);
        continue;
      }
      throw error;
    }
  }
}

/**
 * A settled outcome is reported in the same write that records it: the envelope is fixed once the outcome
 * is, so the model can have it at once and the lifecycle needs no further write (Report remains for
 * records written before this, and as the route's safety net).
 */
function withReport(t: Transition, now: number): Transition {
  if (!accepts(t.op, 'report')) return t;
  const reported = transition(t.op, { type: 'report' }, now);
  return { op: reported.op, events: [...t.events, ...reported.events] };
}

/** Messages posted about the approval (Slack) learn how the call ended; a failed update must not fail the step. */
async function tellSettled(deps: Pick<AdvanceDeps, 'notifier' | 'log'>, op: OperationRecord): Promise<void> {
  try {
    await deps.notifier.approvalSettled?.({ approvalId: op.approval!.approvalId, operationId: op.operationId, toolName: op.toolName });
  } catch (error) {
    logOf(deps).warn('settled notification failed', { operationId: op.operationId, error: (error as Error).message });
  }
}

/** The review is durable (GET /v1/reviews lists it); a failed notification must not fail the step. */
async function tellReviewers(deps: Pick<AdvanceDeps, 'notifier' | 'log'>, op: OperationRecord): Promise<void> {
  try {
    await deps.notifier.reviewRequired?.({
      operationId: op.operationId,
      runId: op.runId,
      toolName: op.toolName,
      reason: op.review!.reason,
    });
  } catch (error) {
    logOf(deps).warn('review notification failed', { operationId: op.operationId, error: (error as Error).message });
  }
}

export async function mustGet(deps: { store: Pick<OperationStore, 'getOperation'> }, operationId: string): Promise<OperationRecord> {
  const op = await deps.store.getOperation(operationId);
  if (!op) throw new Error(`operation ${operationId} not found`);
  return op;
}

/** Full jitter, capped at 200 ms: only for contention on one item, which clears within milliseconds. */
export function jitter(round: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 5 * 2 ** Math.min(round, 6))));
}
