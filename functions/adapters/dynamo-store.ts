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
import { randomBytes } from 'node:crypto';
import type { OperationRecord, RunRecord } from '../core/model';
import { approvalTtlUsed } from '../core/metric-names';
import { type BlobStore, ContentionError, OperationConflictError, OperationExistsError, RunChangedError, type Store } from '../core/ports';
import type { NewTraceEvent, TraceEvent } from '../core/trace';
import { batchRead, makeWatch } from './dynamo-watch';
import { EVENTS_PER_BLOCK, makeTraceClock } from './trace-clock';
import { INDEX, RUNS_LIST_KEY, type TableNames } from './tables';
import { type ArgumentSources, type ArgumentsRef, argumentItems, placeArguments } from './dynamo-arguments';
import { fromItem, toItem } from './dynamo-operation-items';
import { runChangeItem, runFromItem, statusChange, type TransactItem } from './dynamo-run-items';
import { type PackedEvents, packEvents, unpackEvents } from './dynamo-trace-blocks';
import { makeRateLimits } from './dynamo-rate-limits';
import { makeMcpRuns } from './dynamo-mcp-runs';

export type { Store } from '../core/ports';

export function makeDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
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

/** The runs one listing request reads at most, matching or not. */
const MAX_RUNS_EXAMINED = 1000;

/** Sort key 0 of the events table held the run's sequence counter before trace-clock.ts; never an event. */
const LEGACY_COUNTER_SEQ = 0;

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
      return runIndex === undefined
        ? new OperationConflictError(current, { cause: error })
        : new OperationExistsError(current, { cause: error });
    }
    if (runIndex !== undefined && reasons[runIndex]?.Code === 'ConditionalCheckFailed')
      return new RunChangedError('the run changed since it was read', { cause: error });
    if (reasons.some((r) => r.Code === 'TransactionConflict'))
      return new ContentionError('concurrent transactions on one item', { cause: error });
    return error;
  }

  return {
    ...makeRateLimits(doc, tables.watch),
    ...makeMcpRuns(doc, tables.watch),

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
          throw new OperationExistsError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined, { cause: error });
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
          throw new OperationConflictError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined, { cause: error });
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

    async sweepWatch(pass, visit) {
      const walked = await watch.pass(pass, visit);
      if (pass.part !== 0 || !pass.more()) return walked;
      // Operations written before the watch table, through their legacy index (ids only) until their next write.
      const legacy = await queryAll<{ operationId: string }>(
        {
          TableName: tables.operations,
          IndexName: INDEX.legacyActiveByLease,
          KeyConditionExpression: 'activeKey = :a AND leaseUntil < :now',
          ProjectionExpression: 'operationId',
          ExpressionAttributeValues: { ':a': 'active', ':now': pass.now },
        },
        1000,
      );
      for (const { operationId } of legacy) await visit(operationId).catch(() => undefined);
      return { ...walked, visited: walked.visited + legacy.length };
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
      // The index is sorted by creation: the first unexpired one is the oldest pending approval.
      let oldestApprovalTtlUsed = 0;
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new QueryCommand({
            TableName: tables.operations,
            IndexName: INDEX.pendingApprovals,
            KeyConditionExpression: 'approvalPendingKey = :p',
            FilterExpression: '#approval.expiresAt > :now',
            ProjectionExpression: 'createdAt, #approval',
            ExpressionAttributeNames: { '#approval': 'approval' },
            ExpressionAttributeValues: { ':p': 'pending', ':now': now },
            Limit: 25,
            ExclusiveStartKey,
          }),
        );
        const first = page.Items?.[0] as { createdAt?: string; approval?: { expiresAt?: string } } | undefined;
        if (first?.createdAt && first.approval?.expiresAt) {
          oldestApprovalTtlUsed = approvalTtlUsed(first.createdAt, first.approval.expiresAt, now);
          break;
        }
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return { approvalsWaiting, reviewsOpen, oldestApprovalTtlUsed };
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
