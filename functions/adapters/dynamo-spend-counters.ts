import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, type BatchGetCommandOutput, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { THRESHOLD_PERCENTS } from '../core/budget-thresholds';
import type { SpendCounterStore } from '../core/ports';
import { microsOfCents } from '../core/spend';
import { counterKeyOf, type SpendCounterRef, type SpendTake } from '../core/spend-limits';
import type { TransactItem } from './dynamo-run-items';
import type { TableNames } from './tables';

/**
 * Principals' spend counters (config `spendLimits`) as items of the watch table in partitions of their own
 * (`spend#<principal>`, never one of the sweeper's shards), as the rate-limit and model-call items are: the
 * functions that admit and charge calls already write that table. Only the admitting transactions move them.
 */
const SHARD_PREFIX = 'spend#';

const keyOf = (ref: Pick<SpendCounterRef, 'principalId' | 'period' | 'periodKey'>) => ({
  shard: SHARD_PREFIX + ref.principalId,
  watchKey: `${ref.period}#${ref.periodKey}`,
});

/** The counters' part of an admitting transaction: each moves by the call's micros on condition it stays within its cap. */
export function spendTakeItems(table: string, takes: readonly SpendTake[] | undefined): TransactItem[] {
  return (takes ?? []).map((take) => ({
    Update: {
      TableName: table,
      Key: keyOf(take),
      UpdateExpression: 'ADD heldMicros :m SET expiresAtEpoch = :exp',
      ConditionExpression: 'attribute_not_exists(heldMicros) OR heldMicros <= :room',
      ExpressionAttributeValues: { ':m': take.micros, ':room': microsOfCents(take.capCents) - take.micros, ':exp': take.expiresAtEpoch },
    },
  }));
}

/** The counters' part of a model call's charge: moved by what was charged beyond (or short of) the reservation, unconditionally. */
export function spendAdjustItems(table: string, refs: readonly SpendCounterRef[] | undefined, micros: number): TransactItem[] {
  if (micros === 0) return [];
  return (refs ?? []).map((ref) => ({
    Update: {
      TableName: table,
      Key: keyOf(ref),
      UpdateExpression: 'ADD heldMicros :m SET expiresAtEpoch = :exp',
      ExpressionAttributeValues: { ':m': micros, ':exp': ref.expiresAtEpoch },
    },
  }));
}

/** Whether a cancelled transaction failed on a counter's condition (the items from `firstIndex` on are counters). */
export function spendCounterRefused(error: unknown, firstIndex: number): boolean {
  if (!(error instanceof TransactionCanceledException)) return false;
  return (error.CancellationReasons ?? []).slice(firstIndex).some((r) => r?.Code === 'ConditionalCheckFailed');
}

export function makeSpendCounters(doc: DynamoDBDocumentClient, tables: Pick<TableNames, 'runs' | 'watch'>): SpendCounterStore {
  const table = tables.watch;
  return {
    async readThresholds(target) {
      const out = await doc.send(
        new GetCommand({
          ...(target.scope === 'run'
            ? { TableName: tables.runs, Key: { runId: target.runId } }
            : { TableName: table, Key: keyOf(target.ref) }),
          ConsistentRead: true,
          ProjectionExpression: '#usage, heldMicros, threshold50, threshold80, threshold100',
          ExpressionAttributeNames: { '#usage': 'usage' },
        }),
      );
      const item = out.Item ?? {};
      const usage = item.usage as { heldMicros?: number; spendCents?: number } | undefined;
      const held = target.scope === 'run' ? (usage?.heldMicros ?? microsOfCents(usage?.spendCents ?? 0)) : Number(item.heldMicros ?? 0);
      return { heldMicros: held, marked: THRESHOLD_PERCENTS.filter((p) => item[`threshold${p}`] !== undefined) };
    },
    async markThreshold(target, percent, atMicros) {
      // One attribute per threshold (`threshold50`...): the first writer to set it tells the crossing.
      const mark = { '#m': `threshold${percent}` };
      const command =
        target.scope === 'principal'
          ? new UpdateCommand({
              TableName: table,
              Key: keyOf(target.ref),
              UpdateExpression: 'SET #m = :at',
              ConditionExpression: 'attribute_not_exists(#m) AND heldMicros >= :t',
              ExpressionAttributeNames: mark,
              ExpressionAttributeValues: { ':at': new Date().toISOString(), ':t': atMicros },
            })
          : new UpdateCommand({
              TableName: tables.runs,
              Key: { runId: target.runId },
              UpdateExpression: 'SET #m = :at',
              // A run that never reserved a model call holds its spend in whole cents (`spendCents`).
              ConditionExpression:
                'attribute_exists(runId) AND attribute_not_exists(#m) AND (#usage.heldMicros >= :t OR (attribute_not_exists(#usage.heldMicros) AND #usage.spendCents >= :tc))',
              ExpressionAttributeNames: { ...mark, '#usage': 'usage' },
              ExpressionAttributeValues: { ':at': new Date().toISOString(), ':t': atMicros, ':tc': Math.ceil(atMicros / 1_000_000) },
            });
      try {
        await doc.send(command);
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },
    async getSpendCounters(refs) {
      if (!refs.length) return {};
      const held: Record<string, number> = {};
      let keys: Record<string, unknown>[] | undefined = refs.map(keyOf);
      // A call has at most two counters (its day and its month): one batch, retried for what it left unread.
      while (keys?.length) {
        const out: BatchGetCommandOutput = await doc.send(
          new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of out.Responses?.[table] ?? []) {
          const [period, periodKey] = String(item.watchKey).split(/#(.*)/s);
          const principalId = String(item.shard).slice(SHARD_PREFIX.length);
          held[counterKeyOf({ principalId, period: period as SpendCounterRef['period'], periodKey: periodKey! })] = Number(
            item.heldMicros ?? 0,
          );
        }
        keys = out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
      }
      return held;
    },
  };
}
