import { OperationConflictError, RunConflictError, type Store } from '../adapters/dynamo-store';
import type { OperationRecord, RunRecord } from '../core/model';
import type { NewTraceEvent, TraceEvent } from '../core/trace';

export interface Change {
  run?: RunRecord;
  op?: OperationRecord;
  events: NewTraceEvent[];
}

export interface Decision<T> {
  change?: Change;
  value: T;
}

const MAX_ROUNDS = 50;

/**
 * Read the run and the operation, let `decide` compute the change from what it read, write it
 * atomically with conditions on what was read; on a conflict read again and decide again.
 * This is the only way steps change records, so every change is one conditional transaction.
 */
export async function mutate<T>(
  store: Store,
  runId: string,
  operationId: string,
  decide: (run: RunRecord, op: OperationRecord) => Decision<T>,
): Promise<{ value: T; events: TraceEvent[]; op: OperationRecord; run: RunRecord }> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const [run, op] = await Promise.all([store.getRun(runId), store.getOperation(operationId)]);
    if (!run || !op) throw new Error(`operation ${operationId} or its run is missing`);
    const { change, value } = decide(run, op);
    if (!change) return { value, events: [], op, run };
    try {
      const out = await store.commit({
        run: { before: run, after: change.run ?? run },
        ops: change.op ? [{ before: op, after: change.op }] : [],
        events: change.events,
      });
      return { value, events: out.events, op: out.ops[0] ?? op, run: out.run };
    } catch (error) {
      if (error instanceof RunConflictError || error instanceof OperationConflictError) {
        await new Promise((r) => setTimeout(r, Math.random() * 20 * Math.min(round + 1, 5)));
        continue;
      }
      throw error;
    }
  }
  throw new Error(`operation ${operationId}: too much contention, gave up after ${MAX_ROUNDS} rounds`);
}
