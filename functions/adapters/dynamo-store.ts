import { type DynamoDBClient, TransactionCanceledException, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  DeleteCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { type Envelope, succeededSays } from '../core/envelope';
import type { OperationRecord, Outcome, RunRecord } from '../core/model';
import {
  type BlobStore,
  ContentionError,
  OperationConflictError,
  OperationExistsError,
  RunChangedError,
  type RunChange,
  type Store,
} from '../core/ports';
import { RESULT_LIMITS, storedResultOf } from '../core/result-record';
import type { NewTraceEvent, TraceEvent } from '../core/trace';
import { batchRead, makeWatch } from './dynamo-watch';
import { packHash, packKey, unpackHash, unpackKey } from './stored-bytes';
import { packResult, unpackResult } from './stored-result';
import { EVENTS_PER_BLOCK, makeTraceClock } from './trace-clock';
import { INDEX, RUNS_LIST_KEY, type TableNames } from './tables';

export type { Store } from '../core/ports';

export function makeDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

/** Attributes derived from the record for the sparse indexes; computed here, nowhere else. */
function indexKeys(op: OperationRecord): Record<string, unknown> {
  return {
    approvalPendingKey: op.state === 'awaiting_approval' && op.approval?.state === 'pending' ? 'pending' : undefined,
    reviewOpenKey: isOpenReview(op) ? 'open' : undefined,
  };
}

/** Arguments over this size live in the blob store (where there is one); the record keeps `{ bytes, sha256, ref }`. */
const INLINE_ARGUMENTS_BYTES = RESULT_LIMITS.inlineBytes;
/**
 * Arguments of this size or more live in an item of their own, written once (gzipped where that is
 * smaller), beside the operation in its table. With them inline a record of about 600 bytes crosses 1 KB,
 * and it is written twice (in the creating transaction, where items count double, and with its result):
 * 1 KB of arguments costs 3 write units there, 1 in an item of their own.
 */
const SEPARATE_ARGUMENTS_BYTES = 512;

/** Where an item's large arguments went: which field, its size and hash, and the key they are kept under. */
interface ArgumentsRef {
  field: 'frozenArguments' | 'rawArguments';
  bytes: number;
  sha256: string;
  ref: string;
  /** `item`: an item of the operations table keyed `ref`; absent: the blob store. */
  in?: 'item';
}

/** Arguments kept in items of their own, expiring with their operation. */
interface ArgumentItems {
  put(ref: string, text: string, expiresAtEpoch: number | undefined): Promise<void>;
  get(ref: string): Promise<string | undefined>;
}

/**
 * Where an item's arguments are kept and read back from; and, for each record this store handed out, where
 * its arguments were (null: inline), so a write of the same arguments again is skipped.
 */
interface ArgumentSources {
  blobs: BlobStore | undefined;
  items: ArgumentItems;
  placed: WeakMap<OperationRecord, ArgumentsRef | null>;
}

/** The envelope as stored: without the record's ids, and a succeeded one as its status alone (`compact`). */
type StoredItem = Omit<OperationRecord, 'envelope'> & {
  envelope?: Omit<Envelope, 'call_id' | 'logical_operation_id' | 'message' | 'allowed_next_actions'> &
    Partial<Pick<Envelope, 'call_id' | 'logical_operation_id' | 'message' | 'allowed_next_actions'>>;
  argumentsRef?: ArgumentsRef;
};

/**
 * Where a record's arguments are kept: inline when small, else in an item of their own, or over 64 KiB in
 * the blob store, so no item can reach DynamoDB's 400 KB. Written once, when they first appear (the key
 * names their hash, so other arguments never overwrite them), before the record that points at them.
 */
function placeArguments(
  op: OperationRecord,
  before: OperationRecord | undefined,
  sources: ArgumentSources,
): { ref?: ArgumentsRef; write: () => Promise<void> } {
  const none = { write: async () => undefined };
  const field = op.frozenArguments !== undefined ? 'frozenArguments' : op.rawArguments !== undefined ? 'rawArguments' : undefined;
  const text = field && op[field];
  if (!field || text === undefined) return none;
  const bytes = Buffer.byteLength(text);
  if (bytes < SEPARATE_ARGUMENTS_BYTES) return none;
  const sha256 = `sha256:${createHash('sha256').update(text).digest('hex')}`;
  const kind = field === 'frozenArguments' ? 'frozen' : 'raw';
  const ref: ArgumentsRef =
    bytes > INLINE_ARGUMENTS_BYTES && sources.blobs
      ? { field, bytes, sha256, ref: `arguments/${op.operationId}/${kind}-${sha256.slice(7, 23)}.json` }
      : { field, bytes, sha256, ref: `${op.operationId}#arguments-${kind}-${sha256.slice(7, 23)}`, in: 'item' };
  const write = () => (ref.in === 'item' ? sources.items.put(ref.ref, text, op.expiresAtEpoch) : sources.blobs!.put(ref.ref, text));
  // Already where they belong only if the record written before put them there (not an older layout).
  const stored = before && sources.placed.get(before)?.ref === ref.ref;
  return { ref, write: stored ? none.write : write };
}

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
function toItem(op: OperationRecord, argumentsRef: ArgumentsRef | undefined): Record<string, unknown> {
  return { ...packResult(compact(op, argumentsRef)), ...indexKeys(op) };
}

/** The record an item holds; items of schema version 1 are upgraded on the way (`upgradeV1`). */
async function fromItem(item: Record<string, unknown>, sources: ArgumentSources): Promise<OperationRecord> {
  // `activeKey` put a record written before the watch table in the legacy index; `writeId` names a write.
  const { activeKey: _a, approvalPendingKey: _p, reviewOpenKey: _r, writeId: _w, ...rest } = item;
  const stored = ((rest.schemaVersion as number | undefined) ?? 1) < 2 ? upgradeV1(rest) : rest;
  return expand(unpackResult(stored) as unknown as StoredItem, sources);
}

/**
 * Arguments in items of their own in the operations table, under a key no operation id can have (`#`);
 * gzipped where that is smaller. They carry no attribute any index uses, and expire with their operation.
 */
function argumentItems(doc: DynamoDBDocumentClient, table: string): ArgumentItems {
  return {
    async put(ref, text, expiresAtEpoch) {
      const gzipped = gzipSync(text, { level: 9 });
      const body = gzipped.byteLength < Buffer.byteLength(text) ? { argumentsGzip: gzipped } : { arguments: text };
      await doc.send(
        new PutCommand({ TableName: table, Item: { operationId: ref, ...body, ...(expiresAtEpoch ? { expiresAtEpoch } : {}) } }),
      );
    },
    async get(ref) {
      const out = await doc.send(new GetCommand({ TableName: table, Key: { operationId: ref }, ConsistentRead: true }));
      const item = out.Item;
      if (!item) return undefined;
      return item.argumentsGzip ? gunzipSync(item.argumentsGzip as Uint8Array).toString('utf8') : (item.arguments as string | undefined);
    },
  };
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

/**
 * One write's events as one item: their numbers are consecutive from the item's `seq`, and the run, the
 * time and (when they share it) the operation are said once, not per event. The item stays small.
 * `owner` marks a block written ahead of its operation's record, outside a transaction: it counts only
 * once that record names it in `traceSeqs` (a writer that lost its race leaves a block nobody names).
 */
interface PackedEvents {
  runId: string;
  seq: number;
  at: string;
  owner?: string;
  operationId?: string;
  callId?: string;
  events: Omit<TraceEvent, 'seq' | 'at' | 'runId'>[];
}

function packEvents(events: TraceEvent[], owner?: string): PackedEvents {
  const [first] = events;
  const shared = (key: 'operationId' | 'callId') => (events.every((e) => e[key] === first[key]) ? first[key] : undefined);
  const operationId = shared('operationId');
  const callId = shared('callId');
  return {
    runId: first.runId,
    seq: first.seq,
    at: first.at,
    ...(owner ? { owner } : {}),
    ...(operationId ? { operationId } : {}),
    ...(callId ? { callId } : {}),
    events: events.map(({ seq: _s, at: _a, runId: _r, operationId: op, callId: call, ...rest }) => ({
      ...(op && !operationId ? { operationId: op } : {}),
      ...(call && !callId ? { callId: call } : {}),
      ...rest,
    })),
  };
}

function unpackEvents(item: PackedEvents | { events: TraceEvent[] }): TraceEvent[] {
  const packed = item as PackedEvents;
  return packed.events.map((e, i) => {
    // Items written before events were packed carry whole events.
    if ('seq' in e && 'runId' in e) return e as TraceEvent;
    const ids = { ...(packed.operationId ? { operationId: packed.operationId } : {}), ...(packed.callId ? { callId: packed.callId } : {}) };
    return { seq: packed.seq + i, at: packed.at, runId: packed.runId, ...ids, ...e } as TraceEvent;
  });
}

/**
 * The SDK resends a write whose answer was lost; the resend then fails its own condition. A plain put has
 * no request token (a transaction has), so each write names itself, and finding its own name is success.
 */
function ownWrite(item: Record<string, AttributeValue> | undefined, writeId: string): boolean {
  return item?.writeId?.S === writeId;
}

/** 72 random bits: unique among the writes of one operation, and short (every byte of the item is billed). */
const newWriteId = () => randomBytes(9).toString('base64url');

/** Waits for a person: the outcome is unknown and neither reconciliation nor a reviewer settled it. */
function isOpenReview(op: OperationRecord): boolean {
  return op.state === 'outcome_unknown' && op.review?.required === true;
}

/** The runs one listing request reads at most, matching or not. */
const MAX_RUNS_EXAMINED = 1000;

/** A run as the core knows it: without the attribute that puts it in the runs list. */
function runFromItem(item: Record<string, unknown>): RunRecord {
  const { listKey: _l, ...run } = item;
  return run as unknown as RunRecord;
}

/** Sort key 0 of the events table held the run's sequence counter before trace-clock.ts; never an event. */
const LEGACY_COUNTER_SEQ = 0;

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** The run's part of a new operation's transaction: an admission or a closing, each conditional on what it needs. */
function runChangeItem(tables: TableNames, run: RunRecord, change: RunChange, at: string): TransactItem | undefined {
  switch (change.kind) {
    case 'none':
      return undefined;
    case 'close':
      // Why: only an open run can become exhausted; a cancelled one stays cancelled.
      return statusChange(tables, run.runId, 'open', change.to, at);
    case 'admit': {
      const { delta } = change;
      const b = run.budgets;
      const turn = delta.opensTurn
        ? {
            set: ', #usage.turns = #usage.turns + :one, lastTurn = :turn',
            cond: ' AND lastTurn < :turn AND #usage.turns < :maxTurns',
            values: { ':maxTurns': b.maxTurns },
          }
        : { set: '', cond: ' AND lastTurn >= :turn', values: {} };
      return {
        Update: {
          TableName: tables.runs,
          Key: { runId: run.runId },
          UpdateExpression: `SET #usage.toolCalls = #usage.toolCalls + :one, #usage.spendCents = #usage.spendCents + :cost, updatedAt = :at${turn.set}`,
          // Why: the budgets' own fields, not the run's version, so concurrent calls never invalidate each other
          // (this is admissionHolds in core/budgets.ts, written as a condition).
          ConditionExpression: `#status = :open AND deadlineAt > :now AND #usage.toolCalls < :maxCalls AND #usage.spendCents <= :spendRoom${turn.cond}`,
          ExpressionAttributeNames: { '#status': 'status', '#usage': 'usage' },
          ExpressionAttributeValues: {
            ':one': 1,
            ':cost': delta.costCents,
            ':at': at,
            ':turn': delta.turn,
            ':open': 'open',
            ':now': new Date(change.now).toISOString(),
            ':maxCalls': b.maxToolCalls,
            ':spendRoom': b.maxSpendCents - delta.costCents,
            ...turn.values,
          },
        },
      };
    }
  }
}

/** A run's status moving from the one read (`from`) to `to`, conditional on it still being `from`. */
function statusChange(tables: TableNames, runId: string, from: RunRecord['status'], to: RunRecord['status'], at: string): TransactItem {
  return {
    Update: {
      TableName: tables.runs,
      Key: { runId },
      UpdateExpression: 'SET #status = :to, updatedAt = :at',
      ConditionExpression: '#status = :from',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':to': to, ':from': from, ':at': at },
    },
  };
}

/**
 * `clock` dates records, events and watch entries (the wall clock; tests may move it). `blobs` holds
 * arguments too large for an item; without it they stay in the item (at most 128 KiB, so it still fits).
 */
export function makeDynamoStore(doc: DynamoDBDocumentClient, tables: TableNames, clock: () => number = Date.now, blobs?: BlobStore): Store {
  const watch = makeWatch(doc, tables.watch, clock);
  const sources: ArgumentSources = { blobs, items: argumentItems(doc, tables.operations), placed: new WeakMap() };
  /** A record as written: remembered with where its arguments went, for the next write of it. */
  const placedAt = (op: OperationRecord, ref: ArgumentsRef | undefined): OperationRecord => {
    sources.placed.set(op, ref ?? null);
    return op;
  };
  const stamps = makeTraceClock(clock);
  const nowIso = () => new Date(clock()).toISOString();
  async function queryAll<T>(input: ConstructorParameters<typeof QueryCommand>[0], limit = Infinity): Promise<T[]> {
    const items: T[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey }));
      items.push(...((page.Items ?? []) as T[]));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey && items.length < limit);
    return items.slice(0, limit);
  }

  /** Numbers a write's events as one block after `floorSeq` (see trace-clock.ts). */
  function numbered(runId: string, events: NewTraceEvent[], at: string, floorSeq?: number): TraceEvent[] {
    if (events.length > EVENTS_PER_BLOCK) throw new Error(`one write carries at most ${EVENTS_PER_BLOCK} trace events`);
    const first = stamps.nextBlock(floorSeq);
    return events.map((e, i) => ({ ...e, seq: first + i, at, runId }));
  }

  /**
   * The events of one write are one item, keyed by the first of their sequence numbers; the condition
   * catches two writers that picked the same block number, and the loser numbers its block again.
   */
  const blockPut = (events: TraceEvent[], expiresAtEpoch: number | undefined, owner?: string) => ({
    TableName: tables.events,
    Item: { ...packEvents(events, owner), ...(expiresAtEpoch ? { expiresAtEpoch } : {}) },
    ConditionExpression: 'attribute_not_exists(seq)',
  });

  /** Writes a block on its own, numbering it again while its number is taken. */
  async function putBlock(
    runId: string,
    events: NewTraceEvent[],
    at: string,
    expiresAtEpoch: number | undefined,
    owner?: string,
    floorSeq?: number,
  ): Promise<TraceEvent[]> {
    if (!events.length) return [];
    for (;;) {
      const traced = numbered(runId, events, at, floorSeq);
      try {
        await doc.send(new PutCommand(blockPut(traced, expiresAtEpoch, owner)));
        return traced;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
  }

  /**
   * An operation's events are written as their own item just before the record that names them: two
   * plain writes cost half of one transaction of both (items in a transaction count twice). A crash in
   * between leaves a block no record names, which the trace never shows. Numbered after the blocks `before`
   * names.
   */
  const writeBlock = (
    op: OperationRecord,
    before: OperationRecord | undefined,
    events: NewTraceEvent[],
    at: string,
  ): Promise<TraceEvent[]> =>
    putBlock(
      op.runId,
      events,
      at,
      op.expiresAtEpoch,
      op.operationId,
      before?.traceSeqs?.length ? Math.max(...before.traceSeqs) : undefined,
    );

  /** The record after a write: it names the block of events written for it, after those of earlier writes. */
  const naming = (op: OperationRecord, earlier: number[] | undefined, traced: TraceEvent[]): OperationRecord => ({
    ...op,
    traceSeqs: traced.length ? [...(earlier ?? []), traced[0].seq] : (earlier ?? []),
  });

  async function readOperations(ids: string[]): Promise<Map<string, OperationRecord>> {
    const items = await batchRead(doc, tables.operations, 'operationId', ids);
    return new Map(await Promise.all(items.map(async (item) => [item.operationId as string, await fromItem(item, sources)] as const)));
  }

  async function eventItems(runId: string): Promise<PackedEvents[]> {
    return queryAll<PackedEvents>({
      TableName: tables.events,
      KeyConditionExpression: 'runId = :r AND seq > :counter',
      ExpressionAttributeValues: { ':r': runId, ':counter': LEGACY_COUNTER_SEQ },
      ConsistentRead: true,
    });
  }

  /** Maps a cancelled transaction onto the domain's errors; `opIndex` is where the operation's put sits. */
  async function transactionError(error: unknown, opIndex: number, runIndex: number | undefined): Promise<unknown> {
    if (!(error instanceof TransactionCanceledException)) return error;
    const reasons = error.CancellationReasons ?? [];
    const op = reasons[opIndex];
    if (op?.Code === 'ConditionalCheckFailed') {
      const current = op.Item ? await fromItem(unmarshall(op.Item), sources) : undefined;
      return runIndex === undefined ? new OperationConflictError(current) : new OperationExistsError(current);
    }
    if (runIndex !== undefined && reasons[runIndex]?.Code === 'ConditionalCheckFailed')
      return new RunChangedError('the run changed since it was read');
    if (reasons.some((r) => r.Code === 'TransactionConflict')) return new ContentionError('concurrent transactions on one item');
    return error;
  }

  return {
    async getRun(runId) {
      const out = await doc.send(new GetCommand({ TableName: tables.runs, Key: { runId }, ConsistentRead: true }));
      return out.Item ? runFromItem(out.Item) : undefined;
    },

    async getOperation(operationId) {
      const out = await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId }, ConsistentRead: true }));
      return out.Item ? fromItem(out.Item, sources) : undefined;
    },

    async putNewRun(run) {
      await doc.send(
        new PutCommand({
          TableName: tables.runs,
          Item: { ...run, listKey: RUNS_LIST_KEY },
          ConditionExpression: 'attribute_not_exists(runId)',
        }),
      );
    },

    async createOperation({ run, runChange, op, events }) {
      if (!events.length) throw new Error('an operation is created with its first trace events');
      const at = nowIso();
      const writeId = newWriteId();
      const proposed: OperationRecord = { ...op, version: 1, updatedAt: at };
      const placed = placeArguments(proposed, undefined, sources);
      // All land before the operation does: a creation that then fails leaves only what nothing names.
      const [traced] = await Promise.all([
        writeBlock(proposed, undefined, events, at),
        watch.entryFor(undefined, proposed),
        placed.write(),
      ]);
      const created = naming(proposed, undefined, traced);
      const runItem = runChangeItem(tables, run, runChange, at);
      const items: TransactItem[] = [
        ...(runItem ? [runItem] : []),
        {
          Put: {
            TableName: tables.operations,
            Item: { ...toItem(created, placed.ref), writeId },
            // Why: the operation id is derived from (runId, callId); it may be created once only.
            ConditionExpression: 'attribute_not_exists(operationId)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ];
      try {
        if (runItem) await doc.send(new TransactWriteCommand({ TransactItems: items }));
        else await doc.send(new PutCommand(items[0].Put!));
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          if (ownWrite(error.Item, writeId)) return { op: placedAt(created, placed.ref), events: traced };
          throw new OperationExistsError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined);
        }
        throw await transactionError(error, runItem ? 1 : 0, runItem ? 0 : -1);
      }
      return { op: placedAt(created, placed.ref), events: traced };
    },

    async updateOperation(before, after, events) {
      const at = nowIso();
      const writeId = newWriteId();
      const moved: OperationRecord = { ...after, version: before.version + 1, updatedAt: at };
      const placed = placeArguments(moved, before, sources);
      const [traced] = await Promise.all([writeBlock(moved, before, events, at), watch.entryFor(before, moved), placed.write()]);
      const next = naming(moved, before.traceSeqs, traced);
      try {
        await doc.send(
          new PutCommand({
            TableName: tables.operations,
            Item: { ...toItem(next, placed.ref), writeId },
            // Why: every transition names the state it leaves and the version it read; and the blocks it read,
            // so a writer holding a record without them cannot drop the names of earlier blocks.
            ConditionExpression: '#state = :from AND #version = :version AND (attribute_not_exists(traceSeqs) OR size(traceSeqs) = :named)',
            ExpressionAttributeNames: { '#state': 'state', '#version': 'version' },
            ExpressionAttributeValues: { ':from': before.state, ':version': before.version, ':named': before.traceSeqs?.length ?? 0 },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          if (ownWrite(error.Item, writeId)) return { op: placedAt(next, placed.ref), events: traced };
          throw new OperationConflictError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined);
        }
        throw error;
      }
      return { op: placedAt(next, placed.ref), events: traced };
    },

    async updateRunStatus(run, to, events) {
      const at = nowIso();
      // Why: a status change is a decision about the status read; another change first means decide again.
      const update = statusChange(tables, run.runId, run.status, to, at);
      for (;;) {
        const traced = numbered(run.runId, events, at);
        try {
          await doc.send(
            new TransactWriteCommand({
              TransactItems: [update, ...(traced.length ? [{ Put: blockPut(traced, run.expiresAtEpoch) }] : [])],
            }),
          );
          return { ...run, status: to, updatedAt: at };
        } catch (error) {
          // The block's number was taken by another writer's block: number it again.
          if (error instanceof TransactionCanceledException && error.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed') continue;
          throw await transactionError(error, -1, 0);
        }
      }
    },

    async appendRunEvents(runId, events, expiresAtEpoch) {
      // One item holds the whole block, so it lands whole or not at all, never half a story.
      return putBlock(runId, events, nowIso(), expiresAtEpoch);
    },

    async listEvents(runId) {
      const items = await eventItems(runId);
      const owners = await readOperations([...new Set(items.flatMap((i) => (i.owner ? [i.owner] : [])))]);
      return items.filter((i) => !i.owner || owners.get(i.owner)?.traceSeqs?.includes(i.seq)).flatMap(unpackEvents);
    },

    async listOperationsOfRun(runId) {
      // Every operation's first block names it (the trace is the run's index of its operations).
      const ids = new Set(
        (await eventItems(runId)).flatMap((i) =>
          [i.owner, i.operationId, ...i.events.map((e) => e.operationId)].filter((id): id is string => !!id),
        ),
      );
      const ops = [...(await readOperations([...ids])).values()].filter((op) => op.runId === runId);
      return ops.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.operationId.localeCompare(b.operationId));
    },

    async listExpiredLeases(now, limit, options = {}) {
      const ignoreLeases = options.ignoreLeases === true;
      const [watched, legacy] = await Promise.all([
        watch.due(now, limit, ignoreLeases, readOperations),
        queryAll<Record<string, unknown>>(
          {
            TableName: tables.operations,
            IndexName: INDEX.legacyActiveByLease,
            KeyConditionExpression: ignoreLeases ? 'activeKey = :a' : 'activeKey = :a AND leaseUntil < :now',
            ExpressionAttributeValues: { ':a': 'active', ...(ignoreLeases ? {} : { ':now': now }) },
          },
          limit,
        ),
      ]);
      const found = new Map(watched.map((op) => [op.operationId, op]));
      for (const item of legacy)
        if (!found.has(item.operationId as string)) found.set(item.operationId as string, await fromItem(item, sources));
      return [...found.values()].slice(0, limit);
    },

    async listPendingApprovals({ approverId, now, limit, after }) {
      const items: OperationRecord[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined = after;
      for (;;) {
        const page = await doc.send(
          new QueryCommand({
            TableName: tables.operations,
            IndexName: INDEX.pendingApprovals,
            KeyConditionExpression: 'approvalPendingKey = :p',
            // Why: the requester (and the run's owner) may not approve the operation, and an expired approval cannot
            // be decided; filtering here (not after a fixed-size read) means every approver sees every approval across pages.
            FilterExpression:
              'principalId <> :me AND (attribute_not_exists(requestedBy) OR requestedBy <> :me) AND #approval.expiresAt > :now',
            ExpressionAttributeNames: { '#approval': 'approval' },
            ExpressionAttributeValues: { ':p': 'pending', ':me': approverId, ':now': now },
            ExclusiveStartKey,
            // Why: Limit counts items read before the filter; reading a little more than needed keeps pages few.
            Limit: Math.min(1000, Math.max(50, 2 * (limit - items.length))),
          }),
        );
        const found = page.Items ?? [];
        for (const [i, item] of found.entries()) {
          items.push(await fromItem(item, sources));
          if (items.length < limit) continue;
          if (i === found.length - 1 && !page.LastEvaluatedKey) return { items };
          // Resume right after the last item handed out; it carries the index key and the table key.
          const last = items[limit - 1];
          return { items, nextKey: { approvalPendingKey: 'pending', createdAt: last.createdAt, operationId: last.operationId } };
        }
        if (!page.LastEvaluatedKey) return { items };
        ExclusiveStartKey = page.LastEvaluatedKey;
      }
    },

    async listRuns({ limit, after, matches = () => true }) {
      const items: RunRecord[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined = after;
      let examined = 0;
      for (;;) {
        const page = await doc.send(
          new QueryCommand({
            TableName: tables.runs,
            IndexName: INDEX.runsByCreation,
            KeyConditionExpression: 'listKey = :l',
            ExpressionAttributeValues: { ':l': RUNS_LIST_KEY },
            ScanIndexForward: false,
            ExclusiveStartKey,
            // Why: the index holds keys only; owner and status are decided on the runs read, so read a little more than needed.
            Limit: Math.min(MAX_RUNS_EXAMINED, Math.max(50, 2 * (limit - items.length))),
          }),
        );
        const keys = (page.Items ?? []) as { runId: string; createdAt: string }[];
        examined += keys.length;
        const runs = new Map(
          (
            await batchRead(
              doc,
              tables.runs,
              'runId',
              keys.map((k) => k.runId),
            )
          ).map((item) => [item.runId as string, runFromItem(item)]),
        );
        for (const [i, key] of keys.entries()) {
          // Gone meanwhile (expired by retention): the index lags its table.
          const run = runs.get(key.runId);
          if (!run || !matches(run)) continue;
          items.push(run);
          if (items.length < limit) continue;
          if (i === keys.length - 1 && !page.LastEvaluatedKey) return { items };
          // Resume right after the last run handed out; the index key and the table key name it.
          return { items, nextKey: { listKey: RUNS_LIST_KEY, createdAt: run.createdAt, runId: run.runId } };
        }
        if (!page.LastEvaluatedKey) return { items };
        ExclusiveStartKey = page.LastEvaluatedKey;
        // Why: one request reads a bounded number of runs, however few match; the next page goes on from here.
        if (examined >= MAX_RUNS_EXAMINED) return { items, nextKey: page.LastEvaluatedKey as Record<string, string> };
      }
    },

    async listOpenReviews(limit) {
      const items = await queryAll<Record<string, unknown>>(
        {
          TableName: tables.operations,
          IndexName: INDEX.openReviews,
          KeyConditionExpression: 'reviewOpenKey = :o',
          ExpressionAttributeValues: { ':o': 'open' },
        },
        limit,
      );
      return Promise.all(items.map((item) => fromItem(item, sources)));
    },

    async countWaiting(now) {
      const count = async (query: Omit<QueryCommandInput, 'TableName' | 'Select' | 'ExclusiveStartKey'>) => {
        let total = 0;
        let ExclusiveStartKey: Record<string, unknown> | undefined;
        do {
          const page = await doc.send(new QueryCommand({ TableName: tables.operations, Select: 'COUNT', ExclusiveStartKey, ...query }));
          total += page.Count ?? 0;
          ExclusiveStartKey = page.LastEvaluatedKey;
        } while (ExclusiveStartKey);
        return total;
      };
      const [approvalsWaiting, reviewsOpen] = await Promise.all([
        count({
          IndexName: INDEX.pendingApprovals,
          KeyConditionExpression: 'approvalPendingKey = :p',
          // Why: an approval whose time is up waits for no one, even before its expiry is recorded.
          FilterExpression: '#approval.expiresAt > :now',
          ExpressionAttributeNames: { '#approval': 'approval' },
          ExpressionAttributeValues: { ':p': 'pending', ':now': now },
        }),
        count({ IndexName: INDEX.openReviews, KeyConditionExpression: 'reviewOpenKey = :o', ExpressionAttributeValues: { ':o': 'open' } }),
      ]);
      return { approvalsWaiting, reviewsOpen };
    },

    async acquireLock(lockKey, owner, leaseMs, now) {
      const expiresAt = new Date(now + leaseMs).toISOString();
      try {
        await doc.send(
          new PutCommand({
            TableName: tables.locks,
            Item: { lockKey, owner, expiresAt, expiresAtEpoch: Math.ceil((now + leaseMs) / 1000) + 3600 },
            // Why: free, or its holder's lease has passed (a crashed holder), or we already hold it (a resend).
            ConditionExpression: 'attribute_not_exists(lockKey) OR expiresAt < :now OR #owner = :owner',
            ExpressionAttributeNames: { '#owner': 'owner' },
            ExpressionAttributeValues: { ':now': new Date(now).toISOString(), ':owner': owner },
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },

    async releaseLock(lockKey, owner) {
      try {
        await doc.send(
          new DeleteCommand({
            TableName: tables.locks,
            Key: { lockKey },
            // Why: never release a lock that expired and was taken over by another holder.
            ConditionExpression: '#owner = :owner',
            ExpressionAttributeNames: { '#owner': 'owner' },
            ExpressionAttributeValues: { ':owner': owner },
          }),
        );
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    },
  };
}
