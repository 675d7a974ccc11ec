import { createHash } from 'node:crypto';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isActive } from '../core/record-predicates';
import type { OperationRecord } from '../core/model';
import type { WatchPass, WatchPassResult } from '../core/ports';

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

/**
 * Shards spread the entries of one moment over partitions. The sweeper reads them all, in parallel
 * invocations each owning a contiguous range of them (`shardsOfPart`).
 */
const SHARDS = ['w0', 'w1', 'w2', 'w3'] as const;
/** How many shards there are: at most this many sweeper invocations can share the work. */
export const WATCH_SHARDS = SHARDS.length;
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

/** The operation an entry watches: its key names it after the time (entries written before said it again as `operationId`). */
const operationIdOf = (watchKey: string): string => watchKey.slice(watchKey.indexOf('#') + 1);

function shardOf(operationId: string): string {
  return SHARDS[createHash('sha256').update(operationId).digest()[0] % SHARDS.length];
}

/** The shards part `part` (from 0) of `parts` owns: a contiguous range, the ranges covering every shard once. */
export function shardsOfPart(part: number, parts: number): readonly string[] {
  if (!Number.isInteger(parts) || parts < 1 || !Number.isInteger(part) || part < 0 || part >= parts)
    throw new RangeError(`sweeper part ${part} of ${parts}: a part is an integer from 0 to parts - 1`);
  return SHARDS.slice(Math.floor((part * SHARDS.length) / parts), Math.floor(((part + 1) * SHARDS.length) / parts));
}

/** What a visit says: when to look at the operation again, or undefined when nothing needs watching. */
export type WatchVisit = (operationId: string) => Promise<string | undefined>;

export interface Watch {
  /** Writes the entry an operation needs after this write, if any (see above). Call it before the write. */
  entryFor(before: OperationRecord | undefined, after: OperationRecord): Promise<void>;
  /** An entry for another record the sweeper looks at when `at` comes (a model call's lease: its id starts `mc_`). */
  entryAt(id: string, at: string): Promise<void>;
  /** Active operations whose lease passed before `now` (every active one with `ignoreLeases`), up to `limit`. */
  due(
    now: string,
    limit: number,
    ignoreLeases: boolean,
    read: (ids: string[]) => Promise<Map<string, OperationRecord>>,
  ): Promise<OperationRecord[]>;
  /**
   * Walks the due entries of one part's shards, reading the entries only (their keys, which name the
   * operation: a projection; no operation is read here), `visit`ing each operation once per page, `concurrency` at a
   * time, and moving each shard's cursor past the pages visited. `visited`: operations visited;
   * `oldestDue`: the due time of the oldest entry left unvisited (a walk stopped by `more`), if any.
   */
  pass(pass: WatchPass, visit: WatchVisit): Promise<WatchPassResult>;
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
        // The key names the operation; an attribute saying it again would only add bytes held for the retention.
        Item: { shard: shardOf(operationId), watchKey: `${time}#${operationId}`, expiresAtEpoch: epoch },
      }),
    );
  }

  async function cursorOf(shard: string): Promise<string> {
    const out = await doc.send(new GetCommand({ TableName: table, Key: { shard: CURSOR_SHARD, watchKey: shard }, ConsistentRead: true }));
    return (out.Item?.position as string | undefined) ?? '';
  }

  return {
    entryAt: put,
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
          const entries = (page.Items ?? []) as { watchKey: string }[];
          const ops = await read([...new Set(entries.map((e) => operationIdOf(e.watchKey)))]);
          for (const entry of entries) {
            if (found.size >= limit) {
              complete = false;
              break pages;
            }
            const op = ops.get(operationIdOf(entry.watchKey));
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

    async pass({ now, part, parts, concurrency, more }, visit) {
      const upTo = `${now}#~`;
      let visited = 0;
      let oldestDue: string | undefined;
      // The part's shards side by side (one that keeps filling must not starve the next), sharing `concurrency`:
      // the bound on what this invocation asks of DynamoDB and of StartExecution at once.
      const shards = shardsOfPart(part, parts);
      // The shard's entries after `from` and due by now, projected: the sweeper reads watch entries only.
      const dueAfter = (shard: string, from: string, projection: string, limit: number) =>
        doc.send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: '#shard = :s AND watchKey BETWEEN :from AND :to',
            ProjectionExpression: projection,
            ExpressionAttributeNames: { '#shard': 'shard' },
            ExpressionAttributeValues: { ':s': shard, ':from': `${from}\u0000`, ':to': upTo },
            Limit: limit,
          }),
        );
      const each = Math.max(1, Math.floor(concurrency / Math.max(1, shards.length)));
      await Promise.all(
        shards.map(async (shard) => {
          let stored = await cursorOf(shard);
          let from = stored;
          // Page by page, so an invocation that ends mid-walk keeps what it did.
          const keep = async (reached: string) => {
            const ceiling = `${new Date(clock() - CURSOR_MARGIN_MS).toISOString()}#~`;
            const next = reached < ceiling ? reached : ceiling;
            if (next <= stored) return;
            await doc.send(new PutCommand({ TableName: table, Item: { shard: CURSOR_SHARD, watchKey: shard, position: next } }));
            stored = next;
          };
          let complete = false;
          while (more()) {
            const page = await dueAfter(shard, from, 'watchKey', PAGE);
            const entries = (page.Items ?? []) as { watchKey: string }[];
            const ids = [...new Set(entries.map((e) => operationIdOf(e.watchKey)))];
            await eachLimited(ids, each, async (operationId) => {
              let again: string | undefined;
              try {
                again = await visit(operationId);
              } catch {
                // Why: the cursor passes this entry; a visit that failed is looked at again a minute later.
                again = new Date(clock() + REWATCH_MS).toISOString();
              }
              if (again !== undefined) await put(operationId, again);
            });
            visited += ids.length;
            if (entries.length) from = entries[entries.length - 1].watchKey;
            // Every entry up to `from` was visited; with the whole range read, everything up to `upTo` was.
            complete = !page.LastEvaluatedKey;
            await keep(complete ? upTo : from);
            if (complete) break;
          }
          if (!complete) {
            const left = await dueAfter(shard, from, 'watchKey', 1);
            const due = (left.Items?.[0]?.watchKey as string | undefined)?.split('#')[0];
            if (due && (!oldestDue || due < oldestDue)) oldestDue = due;
          }
        }),
      );
      return { visited, ...(oldestDue ? { oldestDue } : {}) };
    },
  };
}

/** Runs `task` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
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
