/**
 * Table layouts, the one description shared by the CDK stack and the embedded stack's table creation,
 * so local tables can never drift from deployed ones.
 */
export interface TableLayout {
  /** Logical name; the physical name comes from the environment. */
  id: 'runs' | 'operations' | 'events' | 'watch' | 'locks' | 'idempotency';
  partitionKey: { name: string; type: 'S' | 'N' };
  sortKey?: { name: string; type: 'S' | 'N' };
  ttlAttribute?: string;
  indexes?: {
    name: string;
    partitionKey: { name: string; type: 'S' | 'N' };
    sortKey: { name: string; type: 'S' | 'N' };
    /** What the index copies: `ALL` (the default) or only the keys (`KEYS_ONLY`). */
    projection?: 'ALL' | 'KEYS_ONLY';
  }[];
}

export const INDEX = {
  legacyActiveByLease: 'activeByLease',
  pendingApprovals: 'pendingApprovals',
  openReviews: 'openReviews',
  runsByCreation: 'runsByCreation',
} as const;

/** The partition of `runsByCreation`: every run's `listKey` holds it. */
export const RUNS_LIST_KEY = 'runs';

export const TABLES: readonly TableLayout[] = [
  {
    id: 'runs',
    partitionKey: { name: 'runId', type: 'S' },
    ttlAttribute: 'expiresAtEpoch',
    indexes: [
      // The runs list, newest first. Keys only, and keys a run never changes after creation: the index is
      // written once per run, not again by each call's admission write (an index copy is rewritten only when
      // an attribute it holds changes). Status and owner are read from the runs themselves.
      // One partition for all: run creation stays far below its 1,000 writes a second.
      {
        name: INDEX.runsByCreation,
        partitionKey: { name: 'listKey', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
        projection: 'KEYS_ONLY',
      },
    ],
  },
  {
    id: 'operations',
    partitionKey: { name: 'operationId', type: 'S' },
    ttlAttribute: 'expiresAtEpoch',
    // No index on every operation: each would cost a write unit on most writes. A run's operations are
    // found through its trace; operations to sweep through the watch table.
    indexes: [
      // Legacy, for one release: operations written before the watch table carry `activeKey` and are swept
      // through this index until their next write. No new item carries it, so it costs no write unit; a later
      // release drops it (CloudFormation deletes one index per update, and `byRun` went in this one).
      { name: INDEX.legacyActiveByLease, partitionKey: { name: 'activeKey', type: 'S' }, sortKey: { name: 'leaseUntil', type: 'S' } },
      // Sparse: only operations waiting for a person carry `approvalPendingKey`.
      { name: INDEX.pendingApprovals, partitionKey: { name: 'approvalPendingKey', type: 'S' }, sortKey: { name: 'createdAt', type: 'S' } },
      // Sparse: only outcome_unknown operations flagged for a person's resolution carry `reviewOpenKey`.
      { name: INDEX.openReviews, partitionKey: { name: 'reviewOpenKey', type: 'S' }, sortKey: { name: 'updatedAt', type: 'S' } },
    ],
  },
  // One item per write's block of events, keyed by its first sequence number (trace-clock.ts).
  { id: 'events', partitionKey: { name: 'runId', type: 'S' }, sortKey: { name: 'seq', type: 'N' }, ttlAttribute: 'expiresAtEpoch' },
  // When to look at an active operation again: one entry per operation when it starts (and when its lease
  // shortens), `<time>#<operationId>` in one of a few shards; the sweeper walks them in time order behind a
  // cursor, so a settled operation costs nothing more here (see dynamo-watch.ts).
  { id: 'watch', partitionKey: { name: 'shard', type: 'S' }, sortKey: { name: 'watchKey', type: 'S' }, ttlAttribute: 'expiresAtEpoch' },
  { id: 'locks', partitionKey: { name: 'lockKey', type: 'S' }, ttlAttribute: 'expiresAtEpoch' },
  // Powertools idempotency's default layout.
  { id: 'idempotency', partitionKey: { name: 'id', type: 'S' }, ttlAttribute: 'expiration' },
];

export type TableNames = Record<TableLayout['id'], string>;

export const TABLE_ENV: Record<TableLayout['id'], string> = {
  runs: 'TABLE_RUNS',
  operations: 'TABLE_OPERATIONS',
  events: 'TABLE_EVENTS',
  watch: 'TABLE_WATCH',
  locks: 'TABLE_LOCKS',
  idempotency: 'TABLE_IDEMPOTENCY',
};
