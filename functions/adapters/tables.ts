/**
 * Table layouts, the one description shared by the CDK stack and the embedded stack's table creation,
 * so local tables can never drift from deployed ones.
 */
export interface TableLayout {
  /** Logical name; the physical name comes from the environment. */
  id: 'runs' | 'operations' | 'events' | 'locks' | 'idempotency';
  partitionKey: { name: string; type: 'S' | 'N' };
  sortKey?: { name: string; type: 'S' | 'N' };
  ttlAttribute?: string;
  indexes?: { name: string; partitionKey: { name: string; type: 'S' | 'N' }; sortKey: { name: string; type: 'S' | 'N' } }[];
}

export const INDEX = {
  operationsByRun: 'byRun',
  activeByLease: 'activeByLease',
  pendingApprovals: 'pendingApprovals',
  openReviews: 'openReviews',
} as const;

export const TABLES: readonly TableLayout[] = [
  { id: 'runs', partitionKey: { name: 'runId', type: 'S' }, ttlAttribute: 'expiresAtEpoch' },
  {
    id: 'operations',
    partitionKey: { name: 'operationId', type: 'S' },
    ttlAttribute: 'expiresAtEpoch',
    indexes: [
      { name: INDEX.operationsByRun, partitionKey: { name: 'runId', type: 'S' }, sortKey: { name: 'createdAt', type: 'S' } },
      // Sparse: only operations that still hold a lease carry `activeKey`, so the sweeper reads only those.
      { name: INDEX.activeByLease, partitionKey: { name: 'activeKey', type: 'S' }, sortKey: { name: 'leaseUntil', type: 'S' } },
      // Sparse: only operations waiting for a person carry `approvalPendingKey`.
      { name: INDEX.pendingApprovals, partitionKey: { name: 'approvalPendingKey', type: 'S' }, sortKey: { name: 'createdAt', type: 'S' } },
      // Sparse: only outcome_unknown operations flagged for a person's resolution carry `reviewOpenKey`.
      { name: INDEX.openReviews, partitionKey: { name: 'reviewOpenKey', type: 'S' }, sortKey: { name: 'updatedAt', type: 'S' } },
    ],
  },
  // Sort key 0 holds the run's sequence counter; events start at 1.
  { id: 'events', partitionKey: { name: 'runId', type: 'S' }, sortKey: { name: 'seq', type: 'N' }, ttlAttribute: 'expiresAtEpoch' },
  { id: 'locks', partitionKey: { name: 'lockKey', type: 'S' }, ttlAttribute: 'expiresAtEpoch' },
  // Powertools idempotency's default layout.
  { id: 'idempotency', partitionKey: { name: 'id', type: 'S' }, ttlAttribute: 'expiration' },
];

export type TableNames = Record<TableLayout['id'], string>;

export const TABLE_ENV: Record<TableLayout['id'], string> = {
  runs: 'TABLE_RUNS',
  operations: 'TABLE_OPERATIONS',
  events: 'TABLE_EVENTS',
  locks: 'TABLE_LOCKS',
  idempotency: 'TABLE_IDEMPOTENCY',
};
