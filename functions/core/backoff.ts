/** Capped exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"). */
export interface BackoffPolicy {
  baseSeconds: number;
  capSeconds: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseSeconds: 1, capSeconds: 20 };

/**
 * Seconds to wait before attempt `nextAttempt` (2 for the first retry). A Retry-After from the upstream
 * is a floor. Whole seconds, because the Step Functions Wait state that sleeps takes whole seconds.
 */
export function backoffSeconds(nextAttempt: number, policy: BackoffPolicy, random: () => number, retryAfterSeconds?: number): number {
  const ceiling = Math.min(policy.capSeconds, policy.baseSeconds * 2 ** Math.max(0, nextAttempt - 2));
  const jittered = Math.round(random() * ceiling);
  const floor = retryAfterSeconds && retryAfterSeconds > 0 ? Math.ceil(retryAfterSeconds) : 0;
  return Math.min(Math.max(jittered, floor), Math.max(policy.capSeconds, floor));
}

/**
 * Milliseconds to wait before attempt `nextAttempt` (2 for the first retry) of a delivery that is retried in
 * process (a webhook), not by the lifecycle: the same capped exponential backoff with full jitter, unrounded.
 */
export function backoffMs(nextAttempt: number, policy: { baseMs: number; capMs: number }, random: () => number): number {
  return random() * Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, nextAttempt - 2));
}

/**
 * Seconds a call blocked on its resource's lock waits before its `waits + 1`th look (`waits` = looks so far
 * that found the lock held). One quick look (the holder usually settles within a second), then long ones:
 * any 60 s of waiting holds at most 3 looks, so a blocked call costs at most 3 invocations and 9 Standard
 * transitions (Execute, Route, Backoff) per minute, where an immediate re-entry cost one every 150 ms. Waits
 * up to 60 s stay on an Express execution (30 s and 60 s into the wait, well inside its 5 minutes); the next
 * is longer than Express waits, so the operation goes on on the Standard machine.
 */
export const LOCK_WAIT_SECONDS = [2, 28, 30] as const;
export const LOCK_WAIT_LATER_SECONDS = 61;
export function lockWaitSeconds(waits: number): number {
  return LOCK_WAIT_SECONDS[waits] ?? LOCK_WAIT_LATER_SECONDS;
}
