import { createHash, randomBytes } from 'node:crypto';

/** Run ids are random: nobody can guess another principal's run. */
export function newRunId(): string {
  return `run_${randomBytes(12).toString('base64url')}`;
}

/**
 * One logical operation per (runId, callId): the id is derived, so a duplicate submission
 * can only ever address the same record and the same Step Functions execution name.
 */
export function operationIdFor(runId: string, callId: string): string {
  const digest = createHash('sha256').update(`${runId}\u0000${callId}`).digest('base64url').slice(0, 26);
  return `op_${digest.replace(/[^A-Za-z0-9]/g, 'x')}`;
}

export function approvalIdFor(operationId: string): string {
  return `apr_${operationId.slice(3)}`;
}

export function operationIdOfApproval(approvalId: string): string | undefined {
  return approvalId.startsWith('apr_') ? `op_${approvalId.slice(4)}` : undefined;
}

/**
 * Who holds a rate-limit slot: the operation, and which submission of it took the slot. Two concurrent
 * submissions of one call share the operation id; the one that loses the create gives back only its own slot.
 */
export function newRateSlotHolder(operationId: string): string {
  return `${operationId}.${randomBytes(9).toString('base64url')}`;
}

/** 256 bits from the CSPRNG, made once per logical operation and reused by every attempt. */
export function newIdempotencyKey(): string {
  return `idk_${randomBytes(32).toString('base64url')}`;
}
