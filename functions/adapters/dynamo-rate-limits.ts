import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RateLimitStore } from '../core/ports';

/**
 * Rate-limit counters and slots (core/rate-limits.ts), as items of the watch table, each in a partition of
 * its own (`shard` is the counter's or slot's key, never one of the sweeper's shards, so the sweeper never
 * reads them). Why that table and not the locks table: every function that admits a call (Api) or settles
 * one (any lifecycle step) already writes it, so no role changes; only Execute, Reconcile and Report may
 * write the locks table. A slot is freed by an update, never a delete: no role deletes from this table.
 */
const ITEM = 'rate';
/** Sorts before any time a clock gives: a freed slot is free to anyone (`until < now`). */
const FREE = new Date(0).toISOString();
/** A slot's item outlives its lease by this much before TTL drops it (only its holder's lease matters). */
const SLOT_TTL_SECONDS = 3600;

export function makeRateLimits(doc: DynamoDBDocumentClient, table: string): RateLimitStore {
  /** Sends a conditional write; false when its condition failed. */
  async function conditional(command: PutCommand | UpdateCommand): Promise<boolean> {
    try {
      await (command instanceof PutCommand ? doc.send(command) : doc.send(command));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  return {
    takeRateCount(counterKey, limit, expiresAtEpoch) {
      return conditional(
        new UpdateCommand({
          TableName: table,
          Key: { shard: counterKey, watchKey: ITEM },
          UpdateExpression: 'ADD #n :one SET expiresAtEpoch = :exp',
          // Why: one conditional write decides, so racing processes never admit more than the limit together.
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':exp': expiresAtEpoch },
        }),
      );
    },

    async giveBackRateCount(counterKey) {
      await conditional(
        new UpdateCommand({
          TableName: table,
          Key: { shard: counterKey, watchKey: ITEM },
          UpdateExpression: 'ADD #n :minusOne',
          ConditionExpression: '#n > :zero',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':minusOne': -1, ':zero': 0 },
        }),
      );
    },

    takeRateSlot(slotKey, holder, until, now) {
      return conditional(
        new PutCommand({
          TableName: table,
          Item: {
            shard: slotKey,
            watchKey: ITEM,
            holder,
            until: new Date(until).toISOString(),
            expiresAtEpoch: Math.ceil(until / 1000) + SLOT_TTL_SECONDS,
          },
          // Why: free (never taken, freed, or its holder's lease passed: a holder that crashed), or ours (a resend).
          ConditionExpression: 'attribute_not_exists(#shard) OR #until < :now OR holder = :holder',
          ExpressionAttributeNames: { '#shard': 'shard', '#until': 'until' },
          ExpressionAttributeValues: { ':now': new Date(now).toISOString(), ':holder': holder },
        }),
      );
    },

    async giveBackRateSlot(slotKey, holder) {
      await conditional(
        new UpdateCommand({
          TableName: table,
          Key: { shard: slotKey, watchKey: ITEM },
          UpdateExpression: 'SET #until = :free REMOVE holder',
          // Why: never free a slot that lapsed and was taken by another holder.
          ConditionExpression: 'holder = :holder',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':free': FREE, ':holder': holder },
        }),
      );
    },
  };
}
