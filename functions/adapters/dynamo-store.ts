import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { BlobStore, Store } from '../core/ports';
import { makeDynamoLockStore } from './dynamo-lock-store';
import { makeMcpRuns } from './dynamo-mcp-runs';
import { makeDynamoModelCalls } from './dynamo-model-calls';
import { makeDynamoOperationStore } from './dynamo-operation-store';
import { makeRateLimits } from './dynamo-rate-limits';
import { makeDynamoRollups } from './dynamo-rollups';
import { makeDynamoRecoveryStore } from './dynamo-recovery-store';
import { withResolvedWrites } from './dynamo-resolved-writes';
import { makeDynamoReviewQueries } from './dynamo-review-queries';
import { makeDynamoRunStore } from './dynamo-run-store';
import { makeSpendCounters } from './dynamo-spend-counters';
import { makeDynamoStoreContext } from './dynamo-store-context';
import { makeDynamoTraceStore } from './dynamo-trace-store';
import type { TableNames } from './tables';

export type { Store } from '../core/ports';

/** The store's client: the document client, its puts and transactions sent with handlers resolved once (dynamo-resolved-writes.ts). */
export function makeDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return withResolvedWrites(DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }), client);
}

/**
 * Every role of the store over one set of tables, each role in its own module over a shared context
 * (dynamo-store-context.ts). `clock` dates records, events and watch entries (the wall clock; tests may
 * move it). `blobs` holds arguments too large for an item; without it they stay in the item (at most
 * 128 KiB, so it still fits).
 */
export function makeDynamoStore(doc: DynamoDBDocumentClient, tables: TableNames, clock: () => number = Date.now, blobs?: BlobStore): Store {
  const ctx = makeDynamoStoreContext(doc, tables, clock, blobs);
  return {
    ...makeDynamoOperationStore(ctx),
    ...makeDynamoRunStore(ctx),
    ...makeDynamoTraceStore(ctx),
    ...makeDynamoRecoveryStore(ctx),
    ...makeDynamoReviewQueries(ctx),
    ...makeDynamoLockStore(doc, tables.locks),
    ...makeRateLimits(doc, tables.watch),
    ...makeMcpRuns(doc, tables.watch),
    ...makeDynamoModelCalls(ctx),
    ...makeDynamoRollups(doc, tables.watch),
    ...makeSpendCounters(doc, tables),
  };
}
