import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { OperationRecord } from '../core/model';
import { type BlobStore, ContentionError, OperationConflictError, OperationExistsError, RunChangedError } from '../core/ports';
import { type ArgumentSources, type ArgumentsRef, argumentItems } from './dynamo-arguments';
import { fromItem } from './dynamo-operation-items';
import { fromBlockItem, type PackedEvents } from './dynamo-trace-blocks';
import { makeTraceWrites, type TraceWrites } from './dynamo-trace-writes';
import { batchRead, makeWatch, type Watch } from './dynamo-watch';
import type { TableNames } from './tables';

/** Sort key 0 of the events table held the run's sequence counter before trace-clock.ts; never an event. */
const LEGACY_COUNTER_SEQ = 0;

/**
 * What the roles of the DynamoDB store share (dynamo-store.ts composes them): one client, one clock, one
 * watch list and one trace clock per store, so the roles number blocks and date entries as one store would.
 */
export interface DynamoStoreContext {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  /** Where each record's arguments went when it was written or read, for the next write of it. */
  sources: ArgumentSources;
  watch: Watch;
  trace: TraceWrites;
  nowIso(): string;
  /** A record as written: remembered with where its arguments went, for the next write of it. */
  placedAt(op: OperationRecord, ref: ArgumentsRef | undefined): OperationRecord;
  /** Every page of a query, up to `limit` items. */
  queryAll<T>(input: ConstructorParameters<typeof QueryCommand>[0], limit?: number): Promise<T[]>;
  readOperations(ids: string[]): Promise<Map<string, OperationRecord>>;
  /** The stored blocks of a run's trace, named or not (the trace store keeps those a record names). */
  eventItems(runId: string): Promise<PackedEvents[]>;
  /** Maps a cancelled transaction onto the domain's errors; `opIndex` is where the operation's put sits. */
  transactionError(error: unknown, opIndex: number, runIndex: number | undefined): Promise<unknown>;
}

export function makeDynamoStoreContext(
  doc: DynamoDBDocumentClient,
  tables: TableNames,
  clock: () => number,
  blobs: BlobStore | undefined,
): DynamoStoreContext {
  const sources: ArgumentSources = { blobs, items: argumentItems(doc, tables.operations), placed: new WeakMap() };

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

  return {
    doc,
    tables,
    sources,
    watch: makeWatch(doc, tables.watch, clock),
    trace: makeTraceWrites(doc, tables.events, clock),
    nowIso: () => new Date(clock()).toISOString(),
    placedAt(op, ref) {
      sources.placed.set(op, ref ?? null);
      return op;
    },
    queryAll,

    async readOperations(ids) {
      const items = await batchRead(doc, tables.operations, 'operationId', ids);
      return new Map(await Promise.all(items.map(async (item) => [item.operationId as string, await fromItem(item, sources)] as const)));
    },

    async eventItems(runId) {
      const items = await queryAll<Record<string, unknown>>({
        TableName: tables.events,
        KeyConditionExpression: 'runId = :r AND seq > :counter',
        ExpressionAttributeValues: { ':r': runId, ':counter': LEGACY_COUNTER_SEQ },
        ConsistentRead: true,
      });
      return items.map(fromBlockItem);
    },

    async transactionError(error, opIndex, runIndex) {
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
    },
  };
}
