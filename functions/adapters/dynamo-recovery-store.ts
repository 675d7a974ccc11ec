import type { RecoveryStore } from '../core/ports';
import { fromItem } from './dynamo-operation-items';
import type { DynamoStoreContext } from './dynamo-store-context';
import { INDEX } from './tables';

/** What the sweeper walks: the watch list (dynamo-watch.ts), and the legacy lease index for operations written before it. */
export function makeDynamoRecoveryStore(ctx: DynamoStoreContext): Required<RecoveryStore> {
  const { tables, watch } = ctx;

  return {
    async listExpiredLeases(now, limit, options = {}) {
      const ignoreLeases = options.ignoreLeases === true;
      const [watched, legacy] = await Promise.all([
        watch.due(now, limit, ignoreLeases, ctx.readOperations),
        ctx.queryAll<Record<string, unknown>>(
          {
            TableName: tables.operations,
            IndexName: INDEX.legacyActiveByLease,
            KeyConditionExpression: ignoreLeases ? 'activeKey = :a' : 'activeKey = :a AND leaseUntil < :now',
            ExpressionAttributeValues: { ':a': 'active', ...(ignoreLeases ? {} : { ':now': now }) },
          },
          limit,
        ),
      ]);
      const found = new Map(watched.map((op) => [op.operationId, op]));
      for (const item of legacy)
        if (!found.has(item.operationId as string)) found.set(item.operationId as string, await fromItem(item, ctx.sources));
      return [...found.values()].slice(0, limit);
    },

    async sweepWatch(pass, visit) {
      const walked = await watch.pass(pass, visit);
      if (pass.part !== 0 || !pass.more()) return walked;
      // Operations written before the watch table, through their legacy index (ids only) until their next write.
      const legacy = await ctx.queryAll<{ operationId: string }>(
        {
          TableName: tables.operations,
          IndexName: INDEX.legacyActiveByLease,
          KeyConditionExpression: 'activeKey = :a AND leaseUntil < :now',
          ProjectionExpression: 'operationId',
          ExpressionAttributeValues: { ':a': 'active', ':now': pass.now },
        },
        1000,
      );
      for (const { operationId } of legacy) await visit(operationId).catch(() => undefined);
      return { ...walked, visited: walked.visited + legacy.length };
    },
  };
}
