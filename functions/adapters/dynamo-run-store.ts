import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { RunRecord } from '../core/model';
import type { RunStore } from '../core/ports';
import { runFromItem, statusChange } from './dynamo-run-items';
import type { DynamoStoreContext } from './dynamo-store-context';
import { batchRead } from './dynamo-watch';
import { INDEX, RUNS_LIST_KEY } from './tables';

/** The runs one listing request reads at most, matching or not. */
const MAX_RUNS_EXAMINED = 1000;

/** Runs in the runs table, listed newest first through the keys-only `runsByCreation` index. */
export function makeDynamoRunStore(ctx: DynamoStoreContext): RunStore {
  const { doc, tables, trace } = ctx;

  return {
    async getRun(runId) {
      const out = await doc.send(new GetCommand({ TableName: tables.runs, Key: { runId }, ConsistentRead: true }));
      return out.Item ? runFromItem(out.Item) : undefined;
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

    async updateRunStatus(run, to, events) {
      const at = ctx.nowIso();
      // Why: a status change is a decision about the status read; another change first means decide again.
      const update = statusChange(tables, run.runId, run.status, to, at);
      for (;;) {
        const traced = trace.numbered(run.runId, events, at);
        try {
          await doc.send(
            new TransactWriteCommand({
              TransactItems: [update, ...(traced.length ? [{ Put: trace.blockPut(traced, run.expiresAtEpoch) }] : [])],
            }),
          );
          return { ...run, status: to, updatedAt: at };
        } catch (error) {
          // The block's number was taken by another writer's block: number it again.
          if (error instanceof TransactionCanceledException && error.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed') continue;
          throw await ctx.transactionError(error, -1, 0);
        }
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
  };
}
