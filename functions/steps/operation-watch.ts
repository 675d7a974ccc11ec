import type { OperationRecord } from '../core/model';
import type { OperationStore, OperationWatch } from '../core/ports';

/**
 * Wraps a store so every committed version of an operation reaches the waiters in this process: where
 * the steps run beside the API (the embedded stack), a waiting request learns of its result without reading
 * the database. (An attempt the API runs itself hands its record back as its return value.)
 */
export function watchedStore<S extends OperationStore>(store: S): { store: S; watch: OperationWatch } {
  const listeners = new Map<string, Set<(op: OperationRecord) => void>>();
  const emit = (op: OperationRecord) => {
    for (const listener of listeners.get(op.operationId) ?? []) listener(op);
  };
  const watch: OperationWatch = {
    subscribe(operationId, listener) {
      const set = listeners.get(operationId) ?? new Set();
      set.add(listener);
      listeners.set(operationId, set);
      return () => {
        set.delete(listener);
        if (!set.size) listeners.delete(operationId);
      };
    },
  };
  return {
    watch,
    store: {
      ...store,
      async createOperation(input) {
        const out = await store.createOperation(input);
        emit(out.op);
        return out;
      },
      async updateOperation(before, after, events) {
        const out = await store.updateOperation(before, after, events);
        emit(out.op);
        return out;
      },
    },
  };
}
