import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { type Envelope, succeededSays } from '../core/envelope';
import type { OperationRecord, Outcome } from '../core/model';
import { storedResultOf } from '../core/result-record';
import type { ArgumentSources, ArgumentsRef } from './dynamo-arguments';
import { packHash, unpackHash, unpackKey } from './stored-bytes';
import { unpackResult } from './stored-result';

/** How an operation record becomes the item written (compacted, with index keys) and back (older schemas upgraded). */

/**
 * The item's format, in its `schemaVersion` attribute: 3 keeps the record as one compressed binary attribute
 * (`body`, holding the record's own `schemaVersion`) beside the few attributes DynamoDB itself reads. Items of
 * format 2 (every field an attribute, hashes as bytes, large results gzipped) and 1 are still read.
 */
export const ITEM_FORMAT = 3;

/**
 * What deflate starts from when it compresses a body (a preset dictionary): the field names and common values
 * of a record, so even a small body's names cost a few bits each. Frozen: bodies of format 3 are read with
 * exactly this text; another dictionary needs another format number.
 */
const RECORD_DICTIONARY = Buffer.from(
  '{"schemaVersion":2,"runId":"run_","callId":"call_","turn":1,"toolName":"","principalId":"","requestedBy":"",' +
    '"requesterGrant":{"roles":["agent"],"tools":"*"},"state":"proposed","risk":"irreversible_write","rawArguments":"{\\"",' +
    '"inputHash":"sha256:","idempotencyKey":"idk_","attempts":0,"createdAt":"20","updatedAt":"20","resumes":0,"risk":"read",' +
    '"frozenArguments":"{\\"","costCents":0,"approvalRequired":true,"approval":{"approvalId":"apr_","state":"pending","expiresAt":"20"},' +
    '"policies":{"call":[]},"approvalRequired":false,"deadlineAt":"20","leaseUntil":"20","plan":{"next":"execute","notBefore":"20"},' +
    '"attemptResumes":0,"attemptClaimed":true,"lastAttempt":{"attempt":1,"latencyMs":1,"upstreamStatus":200,"finishedAt":"20"},' +
    '"envelope":{"status":"succeeded"},"outcome":{"kind":"succeeded","result":{"bytes":1,"sha256":"sha256:","json":"{\\"',
);
/** Deflate looks back at most this far, into the dictionary too. */
const WINDOW_BYTES = 32 * 1024;

/** Attributes every item keeps as they are: its key, its TTL and what the store's conditions read. */
const PLAIN = ['operationId', 'state', 'version', 'traceSeqs', 'expiresAtEpoch'] as const;
/** And what an index holding the item sorts or filters it by, only while it is in that index. */
const PLAIN_WHILE_INDEXED = {
  approvalPendingKey: ['createdAt', 'principalId', 'requestedBy', 'approval'],
  reviewOpenKey: ['updatedAt'],
} as const;

/** Attributes derived from the record for the sparse indexes; computed here, nowhere else. */
function indexKeys(op: OperationRecord): { approvalPendingKey?: 'pending'; reviewOpenKey?: 'open' } {
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
 * name the requester when it is the run's owner, nor a succeeded last attempt its outcome again; large
 * arguments are kept apart (`placeArguments`). `expand` reverses it.
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
  if (argumentsRef) {
    out[argumentsRef.field] = undefined;
    out.argumentsRef = argumentsRef;
  }
  return out;
}

function expand(item: StoredItem, sources: ArgumentSources, argumentsText: string | undefined): OperationRecord {
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
  if (argumentsRef && argumentsText !== undefined) op[argumentsRef.field] = argumentsText;
  sources.placed.set(op, argumentsRef ?? null);
  return op;
}

/** The text of the arguments an item keeps apart, read from where `ref` says. */
async function argumentsOf(operationId: string, ref: ArgumentsRef, sources: ArgumentSources): Promise<string> {
  const from = ref.in === 'item' ? sources.items : sources.blobs;
  const text = await from?.get(ref.ref);
  if (text === undefined) throw new Error(`the arguments of ${operationId} are missing (${ref.ref})`);
  return text;
}

/**
 * The dictionary a body is compressed with: the record's names, then its arguments when they are kept apart
 * (a result often repeats what the call sent, and those bytes then cost a few each).
 */
function dictionaryFor(argumentsText: string | undefined): Buffer {
  if (argumentsText === undefined) return RECORD_DICTIONARY;
  return Buffer.concat([RECORD_DICTIONARY, Buffer.from(argumentsText)]).subarray(-WINDOW_BYTES);
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

/**
 * The item written for a record: the attributes DynamoDB reads (key, TTL, conditions, index keys and what an
 * index holding the item sorts and filters by) as they are, everything else as one deflated JSON `body`.
 * DynamoDB bills a write unit per KB: a settled record with a 1 KB result then takes one unit, not two.
 */
export function toItem(op: OperationRecord, argumentsRef: ArgumentsRef | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { ...compact(op, argumentsRef) };
  const keys = indexKeys(op);
  const plain: Record<string, unknown> = { schemaVersion: ITEM_FORMAT };
  const kept = [
    ...PLAIN,
    ...(keys.approvalPendingKey ? PLAIN_WHILE_INDEXED.approvalPendingKey : []),
    ...(keys.reviewOpenKey ? PLAIN_WHILE_INDEXED.reviewOpenKey : []),
  ];
  for (const name of kept) {
    plain[name] = body[name];
    delete body[name];
  }
  const { argumentsRef: _ref, ...rest } = body;
  if (argumentsRef) plain.argumentsRef = { ...argumentsRef, sha256: packHash(argumentsRef.sha256) };
  const text = argumentsRef ? op[argumentsRef.field] : undefined;
  const deflated = deflateRawSync(JSON.stringify(rest), { level: 9, dictionary: dictionaryFor(text) });
  return { ...plain, ...keys, body: deflated };
}

/** The record an item holds; items of format 2 and 1 are read as they were written (`upgradeV1`). */
export async function fromItem(item: Record<string, unknown>, sources: ArgumentSources): Promise<OperationRecord> {
  // `activeKey` put a record written before the watch table in the legacy index; `writeId` names a write.
  const { activeKey: _a, approvalPendingKey: _p, reviewOpenKey: _r, writeId: _w, ...rest } = item;
  if (rest.schemaVersion === ITEM_FORMAT && rest.body instanceof Uint8Array) {
    const { body, schemaVersion: _f, argumentsRef: packedRef, ...plain } = rest;
    const ref = packedRef as (Omit<ArgumentsRef, 'sha256'> & { sha256: string | Uint8Array }) | undefined;
    const argumentsRef = ref ? ({ ...ref, sha256: unpackHash(ref.sha256) } as ArgumentsRef) : undefined;
    const text = argumentsRef ? await argumentsOf(plain.operationId as string, argumentsRef, sources) : undefined;
    const record = JSON.parse(inflateRawSync(body, { dictionary: dictionaryFor(text) }).toString('utf8')) as Record<string, unknown>;
    return expand({ ...record, ...plain, ...(argumentsRef ? { argumentsRef } : {}) } as unknown as StoredItem, sources, text);
  }
  const stored = unpackResult(((rest.schemaVersion as number | undefined) ?? 1) < 2 ? upgradeV1(rest) : rest) as unknown as StoredItem;
  const text = stored.argumentsRef ? await argumentsOf(stored.operationId, stored.argumentsRef, sources) : undefined;
  return expand(stored, sources, text);
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
