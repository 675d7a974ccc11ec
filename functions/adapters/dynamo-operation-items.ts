import { type Envelope, succeededSays } from '../core/envelope';
import type { OperationRecord, Outcome } from '../core/model';
import { storedResultOf } from '../core/result-record';
import type { ArgumentSources, ArgumentsRef } from './dynamo-arguments';
import { packHash, packKey, unpackHash, unpackKey } from './stored-bytes';
import { packResult, unpackResult } from './stored-result';

/** How an operation record becomes the item written (compacted, with index keys) and back (older schemas upgraded). */

/** Attributes derived from the record for the sparse indexes; computed here, nowhere else. */
function indexKeys(op: OperationRecord): Record<string, unknown> {
  return {
    approvalPendingKey: op.state === 'awaiting_approval' && op.approval?.state === 'pending' ? 'pending' : undefined,
    reviewOpenKey: isOpenReview(op) ? 'open' : undefined,
  };
}

/** The envelope as stored: without the record's ids, and a succeeded one as its status alone (`compact`). */
type StoredItem = Omit<OperationRecord, 'envelope'> & {
  envelope?: Omit<Envelope, 'call_id' | 'logical_operation_id' | 'message' | 'allowed_next_actions'> &
    Partial<Pick<Envelope, 'call_id' | 'logical_operation_id' | 'message' | 'allowed_next_actions'>>;
  argumentsRef?: ArgumentsRef;
};

/**
 * Every write unit counts (items in a transaction cost double, and each index holds a copy): the envelope
 * need not repeat the ids the record carries, nor what every succeeded envelope says; a record need not
 * name the requester when it is the run's owner, nor a succeeded last attempt its outcome again; hashes and
 * keys are kept as bytes (stored-bytes.ts) and large arguments apart (`placeArguments`). `expand` reverses it.
 */
function compact(op: OperationRecord, argumentsRef: ArgumentsRef | undefined): StoredItem {
  const out: StoredItem = { ...op };
  if (op.envelope && op.envelope.call_id === op.callId && op.envelope.logical_operation_id === op.operationId) {
    const { call_id: _c, logical_operation_id: _l, ...rest } = op.envelope;
    out.envelope = isDerivable(rest) ? { status: 'succeeded' } : rest;
  }
  if (op.requestedBy === op.principalId) out.requestedBy = undefined;
  if (op.outcome?.kind === 'succeeded' && op.lastAttempt && isBareSuccess(op.lastAttempt.outcome)) {
    const { outcome: _o, ...lastAttempt } = op.lastAttempt;
    out.lastAttempt = lastAttempt as OperationRecord['lastAttempt'];
  }
  (out as { inputHash: unknown }).inputHash = packHash(op.inputHash);
  (out as { idempotencyKey: unknown }).idempotencyKey = packKey(op.idempotencyKey);
  if (argumentsRef) {
    out[argumentsRef.field] = undefined;
    out.argumentsRef = argumentsRef;
  }
  return out;
}

async function expand(item: StoredItem, sources: ArgumentSources): Promise<OperationRecord> {
  const { argumentsRef, ...rest } = item;
  const op = rest as OperationRecord;
  const stored = item.envelope;
  if (stored) {
    const said = stored.message === undefined ? succeededSays() : {};
    op.envelope = { call_id: op.callId, logical_operation_id: op.operationId, ...stored, ...said } as Envelope;
  }
  op.requestedBy ??= op.principalId;
  if (op.lastAttempt && op.lastAttempt.outcome === undefined && op.outcome?.kind === 'succeeded')
    op.lastAttempt = { ...op.lastAttempt, outcome: { kind: 'succeeded' } };
  op.inputHash = unpackHash(op.inputHash);
  op.idempotencyKey = unpackKey(op.idempotencyKey);
  if (argumentsRef) {
    const from = argumentsRef.in === 'item' ? sources.items : sources.blobs;
    const text = await from?.get(argumentsRef.ref);
    if (text === undefined) throw new Error(`the arguments of ${op.operationId} are missing (${argumentsRef.ref})`);
    op[argumentsRef.field] = text;
  }
  sources.placed.set(op, argumentsRef ?? null);
  return op;
}

/** A succeeded envelope that says nothing but what every one does (its result is not in the record's envelope). */
function isDerivable(envelope: Partial<Envelope>): boolean {
  const { status, message, allowed_next_actions, ...other } = envelope;
  const says = succeededSays();
  return (
    Object.keys(other).length === 0 &&
    status === says.status &&
    message === says.message &&
    JSON.stringify(allowed_next_actions) === JSON.stringify(says.allowed_next_actions)
  );
}

/** An attempt's outcome that is only "succeeded" (its result is kept once, in the operation's outcome). */
function isBareSuccess(outcome: Outcome): boolean {
  return outcome.kind === 'succeeded' && Object.keys(outcome).length === 1;
}

/** The item written for a record: the record compacted, with the sparse index keys. */
export function toItem(op: OperationRecord, argumentsRef: ArgumentsRef | undefined): Record<string, unknown> {
  return { ...packResult(compact(op, argumentsRef)), ...indexKeys(op) };
}

/** The record an item holds; items of schema version 1 are upgraded on the way (`upgradeV1`). */
export async function fromItem(item: Record<string, unknown>, sources: ArgumentSources): Promise<OperationRecord> {
  // `activeKey` put a record written before the watch table in the legacy index; `writeId` names a write.
  const { activeKey: _a, approvalPendingKey: _p, reviewOpenKey: _r, writeId: _w, ...rest } = item;
  const stored = ((rest.schemaVersion as number | undefined) ?? 1) < 2 ? upgradeV1(rest) : rest;
  return expand(unpackResult(stored) as unknown as StoredItem, sources);
}

function upgradeOutcome(outcome: unknown): unknown {
  const o = outcome as { kind?: string; result?: unknown } | undefined;
  if (o?.kind !== 'succeeded') return outcome;
  const { result, ...rest } = o;
  const stored = storedResultOf(result);
  return stored ? { ...rest, result: stored } : rest;
}

/**
 * Schema version 1 kept the raw result in `outcome` (and a `resultFromOutcome` marker in the envelope), the
 * raw arguments beside the frozen ones (or `rawArgumentsAre` when equal) and the result again in the last
 * attempt. Read as version 2: the result as a StoredResult, arguments once, no result in the envelope.
 */
function upgradeV1(item: Record<string, unknown>): Record<string, unknown> {
  const { rawArgumentsAre: _same, ...rest } = item;
  const out: Record<string, unknown> = { ...rest, schemaVersion: 2 };
  if (out.frozenArguments !== undefined) out.rawArguments = undefined;
  else if (out.rawArguments !== undefined && typeof out.rawArguments !== 'string') out.rawArguments = JSON.stringify(out.rawArguments);
  out.outcome = upgradeOutcome(out.outcome);
  out.lateOutcome = upgradeOutcome(out.lateOutcome);
  const last = out.lastAttempt as { outcome?: { kind?: string; result?: unknown } } | undefined;
  if (last?.outcome?.kind === 'succeeded') {
    const { result: _r, ...outcome } = last.outcome;
    out.lastAttempt = { ...last, outcome };
  }
  const envelope = out.envelope as Record<string, unknown> | undefined;
  if (envelope) {
    const { resultFromOutcome: _f, result: _e, ...kept } = envelope;
    out.envelope = kept;
  }
  return out;
}

/** Waits for a person: the outcome is unknown and neither reconciliation nor a reviewer settled it. */
export function isOpenReview(op: OperationRecord): boolean {
  return op.state === 'outcome_unknown' && op.review?.required === true;
}
