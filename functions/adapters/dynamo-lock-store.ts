import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { LockStore } from '../core/ports';

/** Leases on the resources tools name with `lockKey`, one item each in the locks table. */
export function makeDynamoLockStore(doc: DynamoDBDocumentClient, table: string): LockStore {
  return {
    async acquireLock(lockKey, owner, leaseMs, now) {
      const expiresAt = new Date(now + leaseMs).toISOString();
      try {
        await doc.send(
          new PutCommand({
            TableName: table,
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
            TableName: table,
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
