import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { McpRunStore } from '../core/ports';

/**
 * Each principal's current MCP run (the run 2026-07-28 MCP requests that name no run join), as an item of the
 * watch table in a partition of its own: `shard` is `mcprun#<principalId>`, never one of the sweeper's shards
 * (`w0`..`w3` and `cursor`, dynamo-watch.ts, the only partitions it queries or reads), so the sweeper never
 * reads it, as with the rate-limit items (dynamo-rate-limits.ts). That table for the same reason as those:
 * the Api function, which serves MCP, already reads and writes it, so no role changes. The record is only
 * ever replaced, never deleted (no role deletes from this table).
 */
const ITEM = 'mcprun';
const SHARD_PREFIX = 'mcprun#';

export function makeMcpRuns(doc: DynamoDBDocumentClient, table: string): McpRunStore {
  const key = (principalId: string) => ({ shard: SHARD_PREFIX + principalId, watchKey: ITEM });

  return {
    async currentMcpRun(principalId) {
      const out = await doc.send(new GetCommand({ TableName: table, Key: key(principalId), ConsistentRead: true }));
      return out.Item?.runId as string | undefined;
    },

    async replaceCurrentMcpRun(principalId, expected, runId) {
      try {
        await doc.send(
          new PutCommand({
            TableName: table,
            Item: { ...key(principalId), runId },
            // Why: one conditional write decides, so of the requests that race to replace one run, one wins and
            // the others join its run. A resend whose first answer was lost fails here too; its caller reads
            // again and finds its own run, so it joins that run all the same.
            ...(expected === undefined
              ? { ConditionExpression: 'attribute_not_exists(runId)' }
              : { ConditionExpression: 'runId = :expected', ExpressionAttributeValues: { ':expected': expected } }),
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },
  };
}
