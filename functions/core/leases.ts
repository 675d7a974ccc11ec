/**
 * How long an operation's lease lasts. A lease says "someone is working on this until then"; once it
 * passes, the sweeper presumes the worker lost and resumes the operation. So every lease covers the work
 * it guards (a tool's timeout, a backoff, an approval's wait) plus a margin for the step's own writes.
 */

/** Past the work a lease covers: the time a step needs around it (reads, writes, a cold start). */
export const LEASE_MARGIN_MS = 60_000;

/** A reconciliation may look up, then write, then hand back to Route: it holds its lease longer. */
export const RECONCILE_LEASE_MS = 120_000;

const at = (epochMs: number) => new Date(epochMs).toISOString();

/** For a step that does no upstream work of its own (submission, a resume, after an attempt settled). */
export function stepLease(now: number): string {
  return at(now + LEASE_MARGIN_MS);
}

/** For an attempt: its timeout, after a backoff of `delaySeconds` when one comes first. */
export function attemptLease(now: number, timeoutMs: number, delaySeconds = 0): string {
  return at(now + delaySeconds * 1000 + attemptLockMs(timeoutMs));
}

/** How long a tool's lock is held for one attempt. */
export function attemptLockMs(timeoutMs: number): number {
  return timeoutMs + LEASE_MARGIN_MS;
}

/** For a reconciliation: its lookup (the tool's timeout), after a wait of `waitSeconds` when one comes first. */
export function reconcileLease(now: number, waitSeconds = 0, timeoutMs = 0): string {
  return at(now + waitSeconds * 1000 + timeoutMs + RECONCILE_LEASE_MS);
}

/** For an approval wait: until the approval expires, and the margin after it for ExpireApproval. */
export function approvalLease(expiresAt: string): string {
  return at(Date.parse(expiresAt) + LEASE_MARGIN_MS);
}
