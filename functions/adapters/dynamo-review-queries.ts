import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { approvalTtlUsed } from '../core/metric-names';
import type { OperationRecord } from '../core/model';
import type { ReviewQueries } from '../core/ports';
import { fromItem } from './dynamo-operation-items';
import type { DynamoStoreContext } from './dynamo-store-context';
import { INDEX } from './tables';

/** Approvals and reviews waiting, read through the operations table's `pendingApprovals` and `openReviews` indexes. */
export function makeDynamoReviewQueries(ctx: DynamoStoreContext): ReviewQueries {
  const { doc, tables, sources } = ctx;

  return {
    async listPendingApprovals({ approverId, now, limit, after }) {
      const items: OperationRecord[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined = after;
      for (;;) {
        const page = await doc.send(
          new QueryCommand({
            TableName: tables.operations,
            IndexName: INDEX.pendingApprovals,
            KeyConditionExpression: 'approvalPendingKey = :p',
            // Why: the requester (and the run's owner) may not approve the operation, and an expired approval cannot
            // be decided; filtering here (not after a fixed-size read) means every approver sees every approval across pages.
            FilterExpression:
              approverId === null
                ? '#approval.expiresAt > :now'
                : 'principalId <> :me AND (attribute_not_exists(requestedBy) OR requestedBy <> :me) AND #approval.expiresAt > :now',
            ExpressionAttributeNames: { '#approval': 'approval' },
            ExpressionAttributeValues: { ':p': 'pending', ':now': now, ...(approverId === null ? {} : { ':me': approverId }) },
            ExclusiveStartKey,
            // Why: Limit counts items read before the filter; reading a little more than needed keeps pages few.
            Limit: Math.min(1000, Math.max(50, 2 * (limit - items.length))),
          }),
        );
        const found = page.Items ?? [];
        for (const [i, item] of found.entries()) {
          items.push(await fromItem(item, sources));
          if (items.length < limit) continue;
          if (i === found.length - 1 && !page.LastEvaluatedKey) return { items };
          // Resume right after the last item handed out; it carries the index key and the table key.
          const last = items[limit - 1];
          return { items, nextKey: { approvalPendingKey: 'pending', createdAt: last.createdAt, operationId: last.operationId } };
        }
        if (!page.LastEvaluatedKey) return { items };
        ExclusiveStartKey = page.LastEvaluatedKey;
      }
    },

    async listOpenReviews(limit) {
      const items = await ctx.queryAll<Record<string, unknown>>(
        {
          TableName: tables.operations,
          IndexName: INDEX.openReviews,
          KeyConditionExpression: 'reviewOpenKey = :o',
          ExpressionAttributeValues: { ':o': 'open' },
        },
        limit,
      );
      return Promise.all(items.map((item) => fromItem(item, sources)));
    },

    async countWaiting(now) {
      const count = async (query: Omit<QueryCommandInput, 'TableName' | 'Select' | 'ExclusiveStartKey'>) => {
        let total = 0;
        let ExclusiveStartKey: Record<string, unknown> | undefined;
        do {
          const page = await doc.send(new QueryCommand({ TableName: tables.operations, Select: 'COUNT', ExclusiveStartKey, ...query }));
          total += page.Count ?? 0;
          ExclusiveStartKey = page.LastEvaluatedKey;
        } while (ExclusiveStartKey);
        return total;
      };
      const [approvalsWaiting, reviewsOpen] = await Promise.all([
        count({
          IndexName: INDEX.pendingApprovals,
          KeyConditionExpression: 'approvalPendingKey = :p',
          // Why: an approval whose time is up waits for no one, even before its expiry is recorded.
          FilterExpression: '#approval.expiresAt > :now',
          ExpressionAttributeNames: { '#approval': 'approval' },
          ExpressionAttributeValues: { ':p': 'pending', ':now': now },
        }),
        count({ IndexName: INDEX.openReviews, KeyConditionExpression: 'reviewOpenKey = :o', ExpressionAttributeValues: { ':o': 'open' } }),
      ]);
      // The index is sorted by creation: the first unexpired one is the oldest pending approval.
      let oldestApprovalTtlUsed = 0;
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new QueryCommand({
            TableName: tables.operations,
            IndexName: INDEX.pendingApprovals,
            KeyConditionExpression: 'approvalPendingKey = :p',
            FilterExpression: '#approval.expiresAt > :now',
            ProjectionExpression: 'createdAt, #approval',
            ExpressionAttributeNames: { '#approval': 'approval' },
            ExpressionAttributeValues: { ':p': 'pending', ':now': now },
            Limit: 25,
            ExclusiveStartKey,
          }),
        );
        const first = page.Items?.[0] as { createdAt?: string; approval?: { expiresAt?: string } } | undefined;
        if (first?.createdAt && first.approval?.expiresAt) {
          oldestApprovalTtlUsed = approvalTtlUsed(first.createdAt, first.approval.expiresAt, now);
          break;
        }
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return { approvalsWaiting, reviewsOpen, oldestApprovalTtlUsed };
    },
  };
}
