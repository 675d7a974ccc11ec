import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { WaitingPolls } from '../core/ports';

/**
 * The waiting slots as one item of the watch table, in a partition of its own (the sweeper never reads it, as
 * with the rate-limit items in dynamo-rate-limits.ts): attribute `s<i>` holds slot i's lease as
 * `<until ISO> <holder>`, so a lease compares with the time as text. A slot is taken by one conditional update
 * (absent, or its lease passed) and freed by one (still this holder's), so racing API instances never hold
 * more than `slots` between them, and a slot whose instance vanished frees itself at its lease.
 */
const KEY = { shard: 'waiting-polls', watchKey: 'rate' };
/** The item outlives the last lease by this much before TTL drops it (only live leases matter). */
const TTL_SECONDS = 3600;
/** Free slots tried per request: a race lost on one rarely loses on the next. */
const TRIES = 3;

export function dynamoWaitingPolls(doc: DynamoDBDocumentClient, table: string, slots: number): WaitingPolls {
  return {
    async take(holder, until, now) {
      if (slots <= 0) return undefined;
      const nowIso = new Date(now).toISOString();
      const item = (await doc.send(new GetCommand({ TableName: table, Key: KEY, ConsistentRead: true }))).Item ?? {};
      const free = Array.from({ length: slots }, (_, i) => `s${i}`).filter((s) => !(typeof item[s] === 'string' && item[s] >= nowIso));
      // From a random place: instances racing for the same free slot mostly try different ones.
      const start = Math.floor(Math.random() * free.length);
      for (const name of [...free.slice(start), ...free.slice(0, start)].slice(0, TRIES)) {
        const lease = `${new Date(until).toISOString()} ${holder}`;
        try {
          await doc.send(
            new UpdateCommand({
              TableName: table,
              Key: KEY,
              UpdateExpression: 'SET #s = :lease, expiresAtEpoch = :exp',
              // Why: free (never taken, freed, or its lease passed), decided by the write itself.
              ConditionExpression: 'attribute_not_exists(#s) OR #s < :now',
              ExpressionAttributeNames: { '#s': name },
              ExpressionAttributeValues: { ':lease': lease, ':now': nowIso, ':exp': Math.ceil(until / 1000) + TTL_SECONDS },
            }),
          );
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException) continue;
          throw error;
        }
        return {
          async release() {
            try {
              await doc.send(
                new UpdateCommand({
                  TableName: table,
                  Key: KEY,
                  UpdateExpression: 'REMOVE #s',
                  // Why: never free a slot that lapsed and was taken by another holder.
                  ConditionExpression: '#s = :lease',
                  ExpressionAttributeNames: { '#s': name },
                  ExpressionAttributeValues: { ':lease': lease },
                }),
              );
            } catch (error) {
              if (!(error instanceof ConditionalCheckFailedException)) throw error;
            }
          },
        };
      }
      return undefined;
    },
  };
}
