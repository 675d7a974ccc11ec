import { DEFAULT_RETENTION_DAYS } from '../functions/commands/submit';
import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { isRollupShard } from '../functions/adapters/dynamo-rollups';
import { TABLES, type TableLayout, type TableNames } from '../functions/adapters/tables';
import type { CfnTemplate } from '../local/template/assembly';

/**
 * DynamoDB storage and point-in-time recovery, priced per call: what a call leaves in each table (item bytes as
 * DynamoDB bills them, index copies included) held until its TTL ends, at the us-east-1 list prices of the
 * Standard table class (aws.amazon.com/dynamodb/pricing/on-demand): storage $0.25 per GB-month, continuous
 * backups $0.20 per GB-month of the table's size, on the tables the template enables them for.
 */
export const STORAGE_PRICES = { storageGbMonth: 0.25, pitrGbMonth: 0.2 } as const;
/** DynamoDB adds this much to each item (and each index copy) when it sizes a table for billing. */
export const ITEM_OVERHEAD_BYTES = 100;
/** AWS bills a month as 730 hours. */
const MONTH_SECONDS = 730 * 3600;
/** An item with no expiry is held this long (the records' default `retentionDays`). */
export const DEFAULT_RETENTION_SECONDS = DEFAULT_RETENTION_DAYS * 86_400;

/** Bytes of one attribute value as DynamoDB sizes it. */
function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return Math.ceil(v.N.replace(/^-/, '').replace(/^0+/, '').replace('.', '').length / 2) + 1;
  if (v.B !== undefined) return v.B.length;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (v.NS) return v.NS.reduce((n, s) => n + valueBytes({ N: s }), 0);
  if (v.BS) return v.BS.reduce((n, b) => n + b.length, 0);
  if (v.L) return 3 + v.L.reduce((n, e) => n + 1 + valueBytes(e), 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((n, [k, e]) => n + Buffer.byteLength(k) + 1 + valueBytes(e), 0);
  return 0;
}

/** An item's billed size: attribute names and values, plus the per-item overhead. */
export function itemBytes(item: Record<string, AttributeValue>): number {
  return ITEM_OVERHEAD_BYTES + Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + valueBytes(v), 0);
}

/** The copies an item's indexes hold: the keys for KEYS_ONLY, the whole item otherwise; only where it has the index's keys. */
export function indexBytes(layout: TableLayout, item: Record<string, AttributeValue>): number {
  let total = 0;
  for (const index of layout.indexes ?? []) {
    if (!item[index.partitionKey.name] || !item[index.sortKey.name]) continue;
    if (index.projection !== 'KEYS_ONLY') total += itemBytes(item);
    else {
      const keys = [layout.partitionKey.name, layout.sortKey?.name, index.partitionKey.name, index.sortKey.name].filter((k): k is string =>
        Boolean(k),
      );
      total += itemBytes(Object.fromEntries([...new Set(keys)].map((k) => [k, item[k]])));
    }
  }
  return total;
}

/** The tables the template gives point-in-time recovery, by layout id (matched on their key schema). */
export function recoveredTables(template: CfnTemplate): Set<TableLayout['id']> {
  const out = new Set<TableLayout['id']>();
  for (const r of Object.values(template.Resources)) {
    if (r.Type !== 'AWS::DynamoDB::Table') continue;
    const p = (r.Properties ?? {}) as {
      KeySchema?: { AttributeName: string }[];
      PointInTimeRecoverySpecification?: { PointInTimeRecoveryEnabled?: boolean };
    };
    const layout = TABLES.find(
      (l) => l.partitionKey.name === p.KeySchema?.[0]?.AttributeName && l.sortKey?.name === p.KeySchema?.[1]?.AttributeName,
    );
    if (layout && p.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled === true) out.add(layout.id);
  }
  return out;
}

/** Byte-seconds each table holds now: every item (and its index copies) times the seconds until its TTL (or the default retention). */
export async function heldByteSeconds(client: DynamoDBClient, tables: TableNames, nowMs: number): Promise<Record<string, number>> {
  const held: Record<string, number> = {};
  for (const layout of TABLES) {
    let total = 0;
    let ExclusiveStartKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(new ScanCommand({ TableName: tables[layout.id], ExclusiveStartKey }));
      for (const item of page.Items ?? []) {
        // The overview's minutes are held whatever the traffic; rollup-cost.ts prices them.
        if (isRollupShard(item.shard?.S)) continue;
        const ttl = layout.ttlAttribute ? Number(item[layout.ttlAttribute]?.N) : Number.NaN;
        const seconds = Number.isFinite(ttl) ? Math.max(0, ttl - nowMs / 1000) : DEFAULT_RETENTION_SECONDS;
        total += (itemBytes(item) + indexBytes(layout, item)) * seconds;
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    held[layout.id] = total;
  }
  return held;
}

/** USD for holding `byteSeconds` in each table: storage everywhere, recovery where the template enables it. */
export function storageUsd(byteSeconds: Record<string, number>, recovered: ReadonlySet<string>): { storage: number; pitr: number } {
  let storage = 0;
  let pitr = 0;
  for (const [table, held] of Object.entries(byteSeconds)) {
    const gbMonths = held / 1e9 / MONTH_SECONDS;
    storage += gbMonths * STORAGE_PRICES.storageGbMonth;
    if (recovered.has(table)) pitr += gbMonths * STORAGE_PRICES.pitrGbMonth;
  }
  return { storage, pitr };
}
