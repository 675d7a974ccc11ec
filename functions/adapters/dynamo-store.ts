import { createHash } from 'node:crypto';
import { DynamoDBClient, TransactionCanceledException, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, DeleteCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isActive } from '../core/lifecycle';
import type { OperationRecord, RunRecord } from '../core/model';
import type { NewTraceEvent, TraceEvent } from '../core/trace';
import { INDEX, type TableNames } from './tables';

/** One atomic change: the run (always, because it carries the trace sequence), operations and trace events. */
export interface Commit {
  run: { before: RunRecord; after: RunRecord };
  ops?: { before?: OperationRecord; after: OperationRecord }[];
  events: NewTraceEvent[];
}

/** Someone else changed the run first; read again and recompute. */
export class RunConflictError extends Error {
  override name = 'RunConflictError';
}

/** The operation is no longer in the state (or version) the writer read; carries what is there now. */
export class OperationConflictError extends Error {
  override name = 'OperationConflictError';
  constructor(readonly current: OperationRecord | undefined) {
    super('the operation changed since it was read');
  }
}

export interface Store {
  getRun(runId: string): Promise<RunRecord | undefined>;
  getOperation(operationId: string): Promise<OperationRecord | undefined>;
  putNewRun(run: RunRecord): Promise<void>;
  commit(change: Commit): Promise<{ run: RunRecord; ops: OperationRecord[]; events: TraceEvent[] }>;
  listEvents(runId: string): Promise<TraceEvent[]>;
  listOperationsOfRun(runId: string): Promise<OperationRecord[]>;
  listExpiredLeases(now: string, limit: number): Promise<OperationRecord[]>;
  listPendingApprovals(limit: number): Promise<OperationRecord[]>;
  /** Operations waiting for a reviewer's resolution (outcome_unknown, review required), oldest first. */
  listOpenReviews(limit: number): Promise<OperationRecord[]>;
  acquireLock(lockKey: string, owner: string, leaseMs: number, now: number): Promise<boolean>;
  releaseLock(lockKey: string, owner: string): Promise<void>;
}

export function makeDocumentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

/** Attributes derived from the record for the sparse indexes; computed here, nowhere else. */
function toItem(op: OperationRecord): Record<string, unknown> {
  const active = isActive(op);
  return {
    ...op,
    activeKey: active ? 'active' : undefined,
    leaseUntil: active ? op.leaseUntil ?? op.updatedAt : undefined,
    approvalPendingKey: op.state === 'awaiting_approval' && op.approval?.state === 'pending' ? 'pending' : undefined,
    reviewOpenKey: isOpenReview(op) ? 'open' : undefined,
  };
}

function fromItem(item: Record<string, unknown>): OperationRecord {
  const { activeKey: _a, approvalPendingKey: _p, reviewOpenKey: _r, ...op } = item;
  return op as unknown as OperationRecord;
}

/** Waits for a person: the outcome is unknown and neither reconciliation nor a reviewer settled it. */
function isOpenReview(op: OperationRecord): boolean {
  return op.state === 'outcome_unknown' && op.review?.required === true;
}

export function makeDynamoStore(doc: DynamoDBDocumentClient, tables: TableNames): Store {
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
    async getRun(runId) {
      const out = await doc.send(new GetCommand({ TableName: tables.runs, Key: { runId }, ConsistentRead: true }));
      return out.Item as RunRecord | undefined;
    },

    async getOperation(operationId) {
      const out = await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId }, ConsistentRead: true }));
      return out.Item ? fromItem(out.Item) : undefined;
    },

    async putNewRun(run) {
      await doc.send(new PutCommand({ TableName: tables.runs, Item: run, ConditionExpression: 'attribute_not_exists(runId)' }));
    },

    async commit({ run, ops = [], events }) {
      const at = new Date().toISOString();
      const runAfter: RunRecord = { ...run.after, seq: run.before.seq + events.length, updatedAt: at };
      const opsAfter = ops.map(({ before, after }) => ({ ...after, version: (before?.version ?? 0) + 1, updatedAt: at }));
      const traced: TraceEvent[] = events.map((e, i) => ({ ...e, seq: run.before.seq + i + 1, at, runId: runAfter.runId }));
      const items = [
        {
          Put: {
            TableName: tables.runs,
            Item: runAfter,
            // Why: seq is the run's version; a concurrent writer (another call, a budget change) forces a re-read.
            ConditionExpression: '#seq = :seq',
            ExpressionAttributeNames: { '#seq': 'seq' },
            ExpressionAttributeValues: { ':seq': run.before.seq },
          },
        },
        ...ops.map(({ before }, i) => ({
          Put: {
            TableName: tables.operations,
            Item: toItem(opsAfter[i]),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
            ...(before
              ? {
                  // Why: every transition names the state it leaves and the version it read.
                  ConditionExpression: '#state = :from AND #version = :version',
                  ExpressionAttributeNames: { '#state': 'state', '#version': 'version' },
                  ExpressionAttributeValues: { ':from': before.state, ':version': before.version },
                }
              : // Why: a new operation id is derived from (runId, callId); it may be created once only.
                { ConditionExpression: 'attribute_not_exists(operationId)' }),
          },
        })),
        ...traced.map((event) => ({ Put: { TableName: tables.events, Item: event } })),
      ];
      // The token makes an SDK-level resend of this exact transaction a no-op instead of a false conflict.
      const token = createHash('sha256').update(JSON.stringify(items)).digest('hex').slice(0, 36);
      try {
        await doc.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
      } catch (error) {
        if (error instanceof TransactionCanceledException) {
          const reasons = error.CancellationReasons ?? [];
          const opIndex = reasons.findIndex((r, i) => i >= 1 && i <= ops.length && r.Code === 'ConditionalCheckFailed');
          if (opIndex >= 1) {
            const old = reasons[opIndex].Item;
            throw new OperationConflictError(old ? fromItem(unmarshall(old)) : undefined);
          }
          if (reasons[0]?.Code === 'ConditionalCheckFailed' || reasons.some((r) => r.Code === 'TransactionConflict')) {
            throw new RunConflictError('the run changed since it was read');
          }
        }
        throw error;
      }
      return { run: runAfter, ops: opsAfter, events: traced };
    },

    async listEvents(runId) {
      return queryAll<TraceEvent>({
        TableName: tables.events,
        KeyConditionExpression: 'runId = :r',
        ExpressionAttributeValues: { ':r': runId },
        ConsistentRead: true,
      });
    },

    async listOperationsOfRun(runId) {
      const items = await queryAll<Record<string, unknown>>({
        TableName: tables.operations,
        IndexName: INDEX.operationsByRun,
        KeyConditionExpression: 'runId = :r',
        ExpressionAttributeValues: { ':r': runId },
      });
      return items.map(fromItem);
    },

    async listExpiredLeases(now, limit) {
      const items = await queryAll<Record<string, unknown>>(
        {
          TableName: tables.operations,
          IndexName: INDEX.activeByLease,
          KeyConditionExpression: 'activeKey = :a AND leaseUntil < :now',
          ExpressionAttributeValues: { ':a': 'active', ':now': now },
        },
        limit,
      );
      return items.map(fromItem);
    },

    async listPendingApprovals(limit) {
      const items = await queryAll<Record<string, unknown>>(
        {
          TableName: tables.operations,
          IndexName: INDEX.pendingApprovals,
          KeyConditionExpression: 'approvalPendingKey = :p',
          ExpressionAttributeValues: { ':p': 'pending' },
        },
        limit,
      );
      return items.map(fromItem);
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
      return items.map(fromItem);
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
