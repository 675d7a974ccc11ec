import { AsyncLocalStorage } from 'node:async_hooks';

/** An attempt whose tool code is running in this process. */
export interface AttemptInFlight {
  operationId: string;
  attempt: number;
}

/** The attempt the current async context belongs to (set around a tool's `execute` and `reconcile`). */
export const attemptContext = new AsyncLocalStorage<AttemptInFlight>();

/** Every attempt whose tool code runs in this process now: what a stray error can be blamed on when its context is lost. */
export const attemptsInFlight = new Set<AttemptInFlight>();

/** Runs tool code as part of `attempt`, so an error it leaves behind can be attributed to it. */
export async function asAttempt<T>(attempt: AttemptInFlight, run: () => Promise<T>): Promise<T> {
  attemptsInFlight.add(attempt);
  try {
    return await attemptContext.run(attempt, run);
  } finally {
    attemptsInFlight.delete(attempt);
  }
}

/** The attempt a stray error belongs to: its async context's, else the only one in flight; undefined when unknown. */
export function attemptToBlame(): AttemptInFlight | undefined {
  const own = attemptContext.getStore();
  if (own) return own;
  return attemptsInFlight.size === 1 ? [...attemptsInFlight][0] : undefined;
}
