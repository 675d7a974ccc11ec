import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RollupStore } from '../core/ports';
import { epochOfMinute, type MinuteKey, minuteOfCounters, type RollupMinute } from '../core/rollups';

/**
 * The overview's rollups as items of the watch table: one partition a day (`shard` `rollup#YYYY-MM-DD`, never
 * one of the sweeper's shards, so it never reads them), one item a minute (`watchKey` `HH:MM`). Why that table:
 * every function that settles a call already writes it (as for the rate counters, dynamo-rate-limits.ts), so
 * no role changes. A day's minutes are one Query; counters are top-level attributes, so one `ADD` creates
 * the item or adds to it (DynamoDB cannot `ADD` into a map that does not exist yet).
 */
const ROLLUP_PARTITION = 'rollup#';
/** Whether a watch-table item's `shard` is one of the rollups' days (the cost benches price them apart). */
export const isRollupShard = (shard: string | undefined): boolean => shard?.startsWith(ROLLUP_PARTITION) === true;
const KEYS = new Set(['shard', 'watchKey', 'expiresAtEpoch']);

const dayOf = (minute: MinuteKey) => minute.slice(0, 10);
const timeOf = (minute: MinuteKey) => minute.slice(11, 16);

export function makeDynamoRollups(doc: DynamoDBDocumentClient, table: string): RollupStore {
  return {
    async addToRollup({ minute, counters, expiresAtEpoch }) {
      const entries = Object.entries(counters);
      if (!entries.length) return;
      const names = Object.fromEntries(entries.map(([name], i) => [`#c${i}`, name]));
      const values = Object.fromEntries(entries.map(([, value], i) => [`:c${i}`, value]));
      await doc.send(
        new UpdateCommand({
          TableName: table,
          Key: { shard: `${ROLLUP_PARTITION}${dayOf(minute)}`, watchKey: timeOf(minute) },
          UpdateExpression: `ADD ${entries.map((_, i) => `#c${i} :c${i}`).join(', ')}${expiresAtEpoch ? ' SET expiresAtEpoch = :exp' : ''}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ...values, ...(expiresAtEpoch ? { ':exp': expiresAtEpoch } : {}) },
        }),
      );
    },

    async readRollups(first, last) {
      const days: string[] = [];
      for (let day = epochOfMinute(`${dayOf(first)}T00:00`); day <= epochOfMinute(last); day += 86_400_000)
        days.push(new Date(day).toISOString().slice(0, 10));
      const pages = await Promise.all(
        days.map(async (day) => {
          const items: Record<string, unknown>[] = [];
          let ExclusiveStartKey: Record<string, unknown> | undefined;
          do {
            const page = await doc.send(
              new QueryCommand({
                TableName: table,
                KeyConditionExpression: '#shard = :p AND watchKey BETWEEN :from AND :to',
                ExpressionAttributeNames: { '#shard': 'shard' },
                ExpressionAttributeValues: {
                  ':p': `${ROLLUP_PARTITION}${day}`,
                  ':from': day === dayOf(first) ? timeOf(first) : '00:00',
                  ':to': day === dayOf(last) ? timeOf(last) : '23:59',
                },
                ExclusiveStartKey,
              }),
            );
            items.push(...((page.Items ?? []) as Record<string, unknown>[]));
            ExclusiveStartKey = page.LastEvaluatedKey;
          } while (ExclusiveStartKey);
          return items.map((item): RollupMinute => {
            const counters = Object.fromEntries(Object.entries(item).filter(([name]) => !KEYS.has(name)));
            return minuteOfCounters(`${day}T${item.watchKey as string}`, counters);
          });
        }),
      );
      return pages.flat();
    },
  };
}
