import { type AttributeValue, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { randomBytes } from 'node:crypto';
import type { OperationRecord } from '../core/model';
import { OperationConflictError, OperationExistsError, type OperationStore, SpendCounterChangedError } from '../core/ports';
import { placeArguments } from './dynamo-arguments';
import { fromItem, toItem } from './dynamo-operation-items';
import { runChangeItem, type TransactItem } from './dynamo-run-items';
import { spendCounterRefused, spendTakeItems } from './dynamo-spend-counters';
import type { DynamoStoreContext } from './dynamo-store-context';

/**
 * The SDK resends a write whose answer was lost; the resend then fails its own condition. A plain put has
 * no request token (a transaction has), so each write names itself, and finding its own name is success.
 */
function ownWrite(item: Record<string, AttributeValue> | undefined, writeId: string): boolean {
  return item?.writeId?.S === writeId;
}

/** 72 random bits: unique among the writes of one operation, and short (every byte of the item is billed). */
const newWriteId = () => randomBytes(9).toString('base64url');

/** Operations in the operations table, each write with its block of trace events and its watch entry. */
export function makeDynamoOperationStore(ctx: DynamoStoreContext): OperationStore {
  const { doc, tables, sources, watch, trace } = ctx;

  return {
    async getOperation(operationId) {
      const out = await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId }, ConsistentRead: true }));
      return out.Item ? fromItem(out.Item, sources) : undefined;
    },

    async createOperation({ run, runChange, op, events }) {
      if (!events.length) throw new Error('an operation is created with its first trace events');
      const at = ctx.nowIso();
      const writeId = newWriteId();
      const proposed: OperationRecord = { ...op, version: 1, updatedAt: at };
      const placed = placeArguments(proposed, undefined, sources);
      // All land before the operation does: a creation that then fails leaves only what nothing names.
      const [traced] = await Promise.all([
        trace.writeBlock(proposed, undefined, events, at),
        watch.entryFor(undefined, proposed),
        placed.write(),
      ]);
      const created = trace.naming(proposed, undefined, traced);
      const runItem = runChangeItem(tables, run, runChange, at);
      const items: TransactItem[] = [
        ...(runItem ? [runItem] : []),
        {
          Put: {
            TableName: tables.operations,
            Item: { ...toItem(created, placed.ref), writeId },
            // Why: the operation id is derived from (runId, callId); it may be created once only.
            ConditionExpression: 'attribute_not_exists(operationId)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        // Config `spendLimits`: the principal's counters, in the same transaction (none without limits).
        ...spendTakeItems(tables.watch, runChange.kind === 'admit' ? runChange.spend : undefined),
      ];
      try {
        if (runItem) await doc.send(new TransactWriteCommand({ TransactItems: items }));
        else await doc.send(new PutCommand(items[0].Put!));
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          if (ownWrite(error.Item, writeId)) return { op: ctx.placedAt(created, placed.ref), events: traced };
          throw new OperationExistsError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined, {
            cause: error,
          });
        }
        if (spendCounterRefused(error, 2)) throw new SpendCounterChangedError('a spend counter moved', { cause: error });
        throw await ctx.transactionError(error, runItem ? 1 : 0, runItem ? 0 : -1);
      }
      return { op: ctx.placedAt(created, placed.ref), events: traced };
    },

    async updateOperation(before, after, events) {
      const at = ctx.nowIso();
      const writeId = newWriteId();
      const moved: OperationRecord = { ...after, version: before.version + 1, updatedAt: at };
      const placed = placeArguments(moved, before, sources);
      const [traced] = await Promise.all([trace.writeBlock(moved, before, events, at), watch.entryFor(before, moved), placed.write()]);
      const next = trace.naming(moved, before.traceSeqs, traced);
      try {
        await doc.send(
          new PutCommand({
            TableName: tables.operations,
            Item: { ...toItem(next, placed.ref), writeId },
            // Why: every transition names the state it leaves and the version it read; and the blocks it read,
            // so a writer holding a record without them cannot drop the names of earlier blocks.
            ConditionExpression: '#state = :from AND #version = :version AND (attribute_not_exists(traceSeqs) OR size(traceSeqs) = :named)',
            ExpressionAttributeNames: { '#state': 'state', '#version': 'version' },
            ExpressionAttributeValues: { ':from': before.state, ':version': before.version, ':named': before.traceSeqs?.length ?? 0 },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) {
          if (ownWrite(error.Item, writeId)) return { op: ctx.placedAt(next, placed.ref), events: traced };
          throw new OperationConflictError(error.Item ? await fromItem(unmarshall(error.Item), sources) : undefined, {
            cause: error,
          });
        }
        throw error;
      }
      return { op: ctx.placedAt(next, placed.ref), events: traced };
    },

    async listOperationsOfRun(runId) {
      // Every operation's first block names it (the trace is the run's index of its operations).
      const ids = new Set(
        (await ctx.eventItems(runId)).flatMap((i) =>
          [i.owner, i.operationId, ...i.events.map((e) => e.operationId)].filter((id): id is string => !!id),
        ),
      );
      const ops = [...(await ctx.readOperations([...ids])).values()].filter((op) => op.runId === runId);
      return ops.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.operationId.localeCompare(b.operationId));
    },
  };
}
