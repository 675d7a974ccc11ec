import type { AttributeValue, CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { READ_LAG_MAX_MS } from './aws-faults';

type Item = Record<string, AttributeValue>;
type Body = Record<string, unknown>;

/** One item a write request changes: its table and its primary key. */
export interface WrittenKey {
  table: string;
  key: Item;
}

/** A table's primary key attributes, and each index's key attributes. */
interface TableKeys {
  key: string[];
  indexes: Map<string, string[]>;
}

/**
 * The `eventual-reads` fault: DynamoDB answers a read that does not ask for strong consistency, and every index
 * query, from a replica that may be up to a second behind. Each write is recorded with the item's image before
 * it; a lagging read is answered with, for every item written within its lag, the image before the earliest of
 * those writes: the item as it was (absent if it did not exist, and absent from an index it was not in yet).
 * An item deleted within the lag is not brought back into a query's page: the one way this is kinder than AWS.
 */
export class EventualReads {
  private readonly tables = new Map<string, TableKeys>();
  /** Writes of the last second by item, oldest first: when, and the image before. */
  private readonly writes = new Map<string, { at: number; before: Item | undefined }[]>();

  constructor(
    tables: readonly Pick<CreateTableCommandInput, 'TableName' | 'KeySchema' | 'GlobalSecondaryIndexes' | 'LocalSecondaryIndexes'>[],
    private readonly lagMs: () => number,
    private readonly onStale: () => void,
    private readonly now: () => number = Date.now,
  ) {
    for (const t of tables) {
      const names = (schema: { AttributeName?: string }[] | undefined) => (schema ?? []).map((k) => k.AttributeName!);
      const indexes = [...(t.GlobalSecondaryIndexes ?? []), ...(t.LocalSecondaryIndexes ?? [])];
      this.tables.set(t.TableName!, {
        key: names(t.KeySchema),
        indexes: new Map(indexes.map((i) => [i.IndexName!, names(i.KeySchema)])),
      });
    }
  }

  /** The items a write request changes (none for reads): their images are read before it is sent on. */
  writtenKeys(operation: string, body: Body): WrittenKey[] {
    const keyOf = (table: string, item: Item | undefined): WrittenKey[] => {
      const key = item && this.keyOf(table, item);
      return key ? [{ table, key }] : [];
    };
    switch (operation) {
      case 'PutItem':
        return keyOf(String(body.TableName), body.Item as Item);
      case 'UpdateItem':
      case 'DeleteItem':
        return keyOf(String(body.TableName), body.Key as Item);
      case 'TransactWriteItems':
        return ((body.TransactItems ?? []) as Record<string, { TableName: string; Item?: Item; Key?: Item }>[]).flatMap((entry) =>
          Object.entries(entry).flatMap(([kind, op]) => (kind === 'ConditionCheck' ? [] : keyOf(op.TableName, op.Item ?? op.Key))),
        );
      case 'BatchWriteItem':
        return Object.entries(
          (body.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]>,
        ).flatMap(([table, requests]) => requests.flatMap((r) => keyOf(table, r.PutRequest?.Item ?? r.DeleteRequest?.Key)));
      default:
        return [];
    }
  }

  /** Records a write that succeeded, with each item's image from before it. */
  written(keys: readonly WrittenKey[], before: readonly (Item | undefined)[]): void {
    const at = this.now();
    keys.forEach(({ table, key }, i) => {
      const id = itemId(table, key);
      const recent = (this.writes.get(id) ?? []).filter((w) => w.at > at - READ_LAG_MAX_MS);
      recent.push({ at, before: before[i] });
      this.writes.set(id, recent);
    });
    if (this.writes.size > 10_000) this.prune(at);
  }

  /** Whether this request is a read DynamoDB may answer from a replica behind the writes. */
  isEventualRead(operation: string, body: Body): boolean {
    if (operation === 'GetItem') return body.ConsistentRead !== true;
    if (operation === 'Query' || operation === 'Scan') return Boolean(body.IndexName) || body.ConsistentRead !== true;
    if (operation === 'BatchGetItem')
      return Object.values((body.RequestItems ?? {}) as Record<string, { ConsistentRead?: boolean }>).some(
        (r) => r.ConsistentRead !== true,
      );
    return false;
  }

  /** The answer to an eventually consistent read as a replica `lagMs` behind would give it. */
  lagged(operation: string, body: Body, answer: Body): Body {
    const lag = this.lagMs();
    if (lag <= 0) return answer;
    const since = this.now() - lag;
    let stale = false;
    const asSeen = (table: string, item: Item, index?: string): Item | undefined => {
      const key = this.keyOf(table, item);
      const first = key && this.writes.get(itemId(table, key))?.find((w) => w.at > since);
      if (!first) return item;
      stale = true;
      const before = first.before;
      // Not in the index yet: the replica's index has no entry for it.
      const indexKey = index ? this.tables.get(table)?.indexes.get(index) : undefined;
      if (before && indexKey?.some((a) => !(a in before))) return undefined;
      return before;
    };
    const page = (table: string, items: Item[] | undefined, index?: string) =>
      items?.map((i) => asSeen(table, i, index)).filter((i): i is Item => Boolean(i));
    let out = answer;
    if (operation === 'GetItem' && answer.Item) {
      const { Item: _item, ...rest } = answer;
      const seen = asSeen(String(body.TableName), answer.Item as Item);
      out = seen ? { ...rest, Item: seen } : rest;
    } else if ((operation === 'Query' || operation === 'Scan') && Array.isArray(answer.Items)) {
      const items = page(String(body.TableName), answer.Items as Item[], body.IndexName as string | undefined)!;
      out = { ...answer, Items: items, Count: items.length };
    } else if (operation === 'BatchGetItem' && answer.Responses) {
      const requests = (body.RequestItems ?? {}) as Record<string, { ConsistentRead?: boolean }>;
      out = {
        ...answer,
        Responses: Object.fromEntries(
          Object.entries(answer.Responses as Record<string, Item[]>).map(([table, items]) => [
            table,
            requests[table]?.ConsistentRead === true ? items : page(table, items),
          ]),
        ),
      };
    }
    if (stale) this.onStale();
    return out;
  }

  private keyOf(table: string, item: Item): Item | undefined {
    const names = this.tables.get(table)?.key;
    if (!names?.length || names.some((n) => !(n in item))) return undefined;
    return Object.fromEntries(names.map((n) => [n, item[n]]));
  }

  private prune(at: number): void {
    for (const [id, writes] of this.writes) if (writes.every((w) => w.at <= at - READ_LAG_MAX_MS)) this.writes.delete(id);
  }
}

function itemId(table: string, key: Item): string {
  return `${table}\u0000${JSON.stringify(
    Object.keys(key)
      .sort()
      .map((k) => [k, key[k]]),
  )}`;
}
