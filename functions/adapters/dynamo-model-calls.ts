import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { ModelCallRecord } from '../core/model-calls';
import { ModelCallChangedError, ModelCallExistsError, type ModelCallStore, RunChangedError, SpendCounterChangedError } from '../core/ports';
import { microsOfCents } from '../core/spend';
import type { TransactItem } from './dynamo-run-items';
import { spendAdjustItems, spendCounterRefused, spendTakeItems } from './dynamo-spend-counters';
import type { DynamoStoreContext } from './dynamo-store-context';

/**
 * Model calls as items of the watch table in partitions of their own (`modelcall#<modelCallId>`, never one of
 * the sweeper's shards), as the rate-limit and MCP-run items are: the Api function already writes that table.
 * Each write is one transaction with the run's spend fields and the call's block of trace events.
 */
const SHARD_PREFIX = 'modelcall#';
const ITEM = 'call';

export function makeDynamoModelCalls(ctx: DynamoStoreContext): ModelCallStore {
  const { doc, tables, trace } = ctx;
  const key = (modelCallId: string) => ({ shard: SHARD_PREFIX + modelCallId, watchKey: ITEM });
  const fromItem = (item: Record<string, unknown>): ModelCallRecord => {
    const { shard: _s, watchKey: _w, ...call } = item;
    return call as unknown as ModelCallRecord;
  };

  /** Writes `items` with the events' block (renumbered while its number is taken); the caller maps other refusals. */
  async function transact(
    runId: string,
    expiresAtEpoch: number | undefined,
    items: TransactItem[],
    events: Parameters<typeof trace.numbered>[1],
    at: string,
  ) {
    for (;;) {
      const traced = trace.numbered(runId, events, at);
      try {
        await doc.send(new TransactWriteCommand({ TransactItems: [...items, { Put: trace.blockPut(traced, expiresAtEpoch) }] }));
        return;
      } catch (error) {
        if (error instanceof TransactionCanceledException && error.CancellationReasons?.[items.length]?.Code === 'ConditionalCheckFailed')
          continue;
        throw error;
      }
    }
  }

  return {
    async getModelCall(modelCallId) {
      const out = await doc.send(new GetCommand({ TableName: tables.watch, Key: key(modelCallId), ConsistentRead: true }));
      return out.Item ? fromItem(out.Item) : undefined;
    },

    async reserveModelCall({ run, call, events, spend: takes }) {
      const at = ctx.nowIso();
      const cap = microsOfCents(run.budgets.maxSpendCents);
      const r = call.reservedMicros;
      // Why: the spend fields only, never the run's version, so concurrent calls in one run do not invalidate
      // each other. A run's first reservation starts `heldMicros` from its tool spend as read, on condition the
      // tool spend is still what was read.
      const spend =
        run.usage.heldMicros !== undefined
          ? {
              set: '#usage.heldMicros = #usage.heldMicros + :r, #usage.reservedMicros = if_not_exists(#usage.reservedMicros, :zero) + :r',
              cond: '#usage.heldMicros <= :room',
              values: { ':room': cap - r } as Record<string, unknown>,
            }
          : {
              set: '#usage.heldMicros = :held, #usage.reservedMicros = :r, #usage.modelSpendMicros = :zero',
              cond: 'attribute_not_exists(#usage.heldMicros) AND #usage.spendCents = :readCents',
              values: { ':held': microsOfCents(run.usage.spendCents) + r, ':readCents': run.usage.spendCents } as Record<string, unknown>,
            };
      const runUpdate: TransactItem = {
        Update: {
          TableName: tables.runs,
          Key: { runId: run.runId },
          UpdateExpression: `SET ${spend.set}, updatedAt = :at`,
          ConditionExpression: `#status = :open AND deadlineAt > :now AND ${spend.cond}`,
          ExpressionAttributeNames: { '#status': 'status', '#usage': 'usage' },
          ExpressionAttributeValues: { ':r': r, ':zero': 0, ':at': at, ':open': 'open', ':now': at, ...spend.values },
        },
      };
      const put: TransactItem = {
        Put: {
          TableName: tables.watch,
          Item: { ...key(call.modelCallId), ...call },
          ConditionExpression: 'attribute_not_exists(#shard)',
          ExpressionAttributeNames: { '#shard': 'shard' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      };
      // Before the write, as for operations: a reservation is never left unwatched (an entry naming no call is dropped).
      await ctx.watch.entryAt(call.modelCallId, call.leaseUntil);
      try {
        await transact(run.runId, run.expiresAtEpoch, [put, runUpdate, ...spendTakeItems(tables.watch, takes)], events, at);
        return call;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        const [taken, moved] = error.CancellationReasons ?? [];
        if (taken?.Code === 'ConditionalCheckFailed' && taken.Item)
          throw new ModelCallExistsError(fromItem(unmarshall(taken.Item)), { cause: error });
        if (moved?.Code === 'ConditionalCheckFailed') throw new RunChangedError('the run changed since it was read', { cause: error });
        if (spendCounterRefused(error, 2)) throw new SpendCounterChangedError('a spend counter moved', { cause: error });
        if ((error.CancellationReasons ?? []).some((c) => c.Code === 'TransactionConflict'))
          throw new RunChangedError('concurrent transactions on the run', { cause: error });
        throw error;
      }
    },

    async chargeModelCall({ before, after, events }) {
      const at = ctx.nowIso();
      const charged = after.chargedMicros ?? 0;
      const callUpdate: TransactItem = {
        Put: {
          TableName: tables.watch,
          Item: { ...key(after.modelCallId), ...after },
          ConditionExpression: '#state = :before',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':before': before.state },
        },
      };
      // Why no budget condition: the call happened; an overrun is charged in full and may exhaust the run.
      const runUpdate: TransactItem = {
        Update: {
          TableName: tables.runs,
          Key: { runId: before.runId },
          UpdateExpression:
            'SET #usage.heldMicros = #usage.heldMicros + :diff, #usage.reservedMicros = #usage.reservedMicros - :r, #usage.modelSpendMicros = #usage.modelSpendMicros + :c, updatedAt = :at',
          ConditionExpression: 'attribute_exists(runId)',
          ExpressionAttributeNames: { '#usage': 'usage' },
          ExpressionAttributeValues: { ':diff': charged - before.reservedMicros, ':r': before.reservedMicros, ':c': charged, ':at': at },
        },
      };
      for (;;) {
        try {
          const counters = spendAdjustItems(tables.watch, before.spendCounters, charged - before.reservedMicros);
          await transact(before.runId, before.expiresAtEpoch, [callUpdate, runUpdate, ...counters], events, at);
          return after;
        } catch (error) {
          if (!(error instanceof TransactionCanceledException)) throw error;
          const reasons = error.CancellationReasons ?? [];
          if (reasons[0]?.Code === 'ConditionalCheckFailed') throw new ModelCallChangedError('the model call changed', { cause: error });
          // Another write on the run at the same moment: this one holds no condition on it, so it goes again.
          if (reasons.some((c) => c.Code === 'TransactionConflict')) continue;
          throw error;
        }
      }
    },
  };
}
