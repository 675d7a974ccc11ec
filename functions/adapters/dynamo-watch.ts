import { createHash } from 'node:crypto';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isActive } from '../core/record-predicates';
import type { OperationRecord } from '../core/model';

/**
 * The sweeper's watch list, instead of an index over active operations (an index entry is written when an
 * operation starts and deleted when it settles: two of the few write units a call costs).
 *
 * An entry `<time>#<operationId>` says "look at this operation again at this time". One is written when
 * an operation becomes active, at its lease, and again whenever its lease shortens or is renewed after it
 * passed; a longer lease needs none, because the entry that watches the shorter one comes due first.
 * Entries are never deleted (TTL drops them): the sweeper walks them in time order behind a cursor per
 * shard, and each one it passes is either settled (nothing to do), still leased (watched again at its
 * lease) or lost (handed back, and watched again in case its resumption fails). So every active operation
 * always has an entry ahead of the cursor, due at its lease expiry at the latest (or a minute after it was
 * last handed back).
 */

/** Shards spread the entries of one moment over partitions; the sweeper reads them all. */
const SHARDS = ['w0', 'w1', 'w2', 'w3'] as const;
const CURSOR_SHARD = 'cursor';
/** An entry this close to now may still be in flight from its writer, so the cursor stops short of it. */
const CURSOR_MARGIN_MS = 10_000;
/** An operation handed to the sweeper is watched again this much later, in case its resumption fails. */
export const REWATCH_MS = 60_000;
/** How long an entry outlives its time: long enough for a sweeper that was down to still find it. */
const ENTRY_TTL_SECONDS = 30 * 24 * 3600;
const PAGE = 200;

/** Where an operation's lease ends; an active operation without one is due at its last write. */
export const leaseOf = (op: OperationRecord): string => op.leaseUntil ?? op.updatedAt;

function shardOf(operationId: string): string {
  return SHARDS[createHash('sha256').update(operationId).digest()[0] % SHARDS.length];
}

export interface Watch {
  /** Writes the entry an operation needs after this write, if any (see above). Call it before the write. */
  entryFor(before: OperationRecord | undefined, after: OperationRecord): Promise<void>;
  /** Active operations whose lease passed before `now` (every active one with `ignoreLeases`), up to `limit`. */
  due(
    now: string,
    limit: number,
    ignoreLeases: boolean,
    read: (ids: string[]) => Promise<Map<string, OperationRecord>>,
  ): Promise<OperationRecord[]>;
}

export function makeWatch(doc: DynamoDBDocumentClient, table: string, clock: () => number): Watch {
  const nowIso = () => new Date(clock()).toISOString();

  async function put(operationId: string, at: string): Promise<void> {
    // Never behind the cursor: a lease already in the past is due now.
    const now = nowIso();
    const time = at > now ? at : now;
    const epoch = Math.ceil(Date.parse(time) / 1000) + ENTRY_TTL_SECONDS;
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: { shard: shardOf(operationId), watchKey: `${time}#${operationId}`, operationId, expiresAtEpoch: epoch },
      }),
    );
  }

  async function cursorOf(shard: string): Promise<string> {
    const out = await doc.send(new GetCommand({ TableName: table, Key: { shard: CURSOR_SHARD, watchKey: shard }, ConsistentRead: true }));
    return (out.Item?.position as string | undefined) ?? '';
  }

  return {
    async entryFor(before, after) {
      if (!isActive(after)) return;
      // The entry that watches `before` comes due first and is still ahead of the cursor, unless `before` had
      // no entry (new, settled until now, or written before the watch table: no `traceSeqs`) or its lease had
      // passed (then it may have been listed already).
      const watched = before !== undefined && before.traceSeqs !== undefined && isActive(before) && leaseOf(before) >= nowIso();
      if (watched && leaseOf(after) >= leaseOf(before)) return;
      await put(after.operationId, leaseOf(after));
    },

    async due(now, limit, ignoreLeases, read) {
      const found = new Map<string, OperationRecord>();
      const ceiling = `${new Date(clock() - CURSOR_MARGIN_MS).toISOString()}#~`;
      const upTo = ignoreLeases ? '~' : `${now}#~`;
      for (const shard of SHARDS) {
        const cursor = await cursorOf(shard);
        let passed = cursor;
        let ExclusiveStartKey: Record<string, unknown> | undefined;
        let complete = true;
        pages: do {
          const page = await doc.send(
            new QueryCommand({
              TableName: table,
              KeyConditionExpression: '#shard = :s AND watchKey BETWEEN :from AND :to',
              ExpressionAttributeNames: { '#shard': 'shard' },
              ExpressionAttributeValues: { ':s': shard, ':from': `${cursor}\u0000`, ':to': upTo },
              ExclusiveStartKey,
              Limit: PAGE,
            }),
          );
          const entries = (page.Items ?? []) as { watchKey: string; operationId: string }[];
          const ops = await read([...new Set(entries.map((e) => e.operationId))]);
          for (const entry of entries) {
            if (found.size >= limit) {
              complete = false;
              break pages;
            }
            const op = ops.get(entry.operationId);
            if (op && isActive(op)) {
              if (ignoreLeases || leaseOf(op) < now) {
                found.set(op.operationId, op);
                await put(op.operationId, new Date(Date.parse(now) + REWATCH_MS).toISOString());
              } else {
                await put(op.operationId, leaseOf(op));
              }
            }
            passed = entry.watchKey;
          }
          ExclusiveStartKey = page.LastEvaluatedKey;
        } while (ExclusiveStartKey);
        // Every entry up to `passed` was handled; with the whole range read, everything up to `upTo` was.
        const reached = complete ? upTo : passed;
        const next = reached < ceiling ? reached : ceiling;
        if (next > cursor)
          await doc.send(new PutCommand({ TableName: table, Item: { shard: CURSOR_SHARD, watchKey: shard, position: next } }));
      }
      return [...found.values()];
    },
  };
}

/** Reads items by key in batches of 100 (BatchGetItem's limit), consistently, retrying what DynamoDB leaves unprocessed. */
export async function batchRead(
  doc: DynamoDBDocumentClient,
  table: string,
  key: string,
  ids: string[],
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + 100).map((id) => ({ [key]: id }));
    for (let round = 0; keys?.length; round++) {
      const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
      items.push(...(out.Responses?.[table] ?? []));
      keys = out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
      if (keys?.length) await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** round) * Math.random()));
    }
  }
  return items;
}
