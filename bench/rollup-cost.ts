import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { makeDynamoRollups } from '../functions/adapters/dynamo-rollups';
import { makeDocumentClient } from '../functions/adapters/dynamo-store';
import { LATENCY_BUCKETS_MS, ROLLUP_OUTCOMES } from '../functions/core/rollups';
import { ROLLUP_FLUSH_MS } from '../functions/steps/rollups';
import { PRICES } from './cost-model';

/** DynamoDB standard storage, USD per GB-month. */
const STORAGE_GB_MONTH_USD = 0.25;
const MINUTES_A_MONTH = 30 * 1440;

/**
 * The overview's share of a call (`npm run cost`): each process sums its calls' additions and writes them in one
 * UpdateItem at most once per `ROLLUP_FLUSH_MS` (functions/steps/rollups.ts); the paths above count the writes
 * their calls made. Here that write alone: its write units as DynamoDB reports them, made on a minute's item as
 * full as a busy minute's gets (every outcome, every latency bucket, twenty tools and ten models), so the figure
 * holds for the largest item; what it costs a call at a steady rate per process; and the items' storage.
 */
export async function rollupCost(client: DynamoDBClient, table: string, callsPerSecondPerProcess: number): Promise<string> {
  let units = 0;
  let counting = false;
  const name = 'rollupCost';
  client.middlewareStack.add(
    (next) => async (args) => {
      if (!counting) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity;
      units += consumed?.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name },
  );
  try {
    const rollups = makeDynamoRollups(makeDocumentClient(client), table);
    // A minute of the year 2999: no call of the bench shares it.
    const minute = '2999-01-01T00:00';
    const full: Record<string, number> = {};
    for (const o of ROLLUP_OUTCOMES) full[`c_${o}`] = 1_000;
    for (const [i] of LATENCY_BUCKETS_MS.entries()) full[`h_${i}`] = 1_000;
    for (let i = 0; i < 20; i++) full[`t_tool_number_${i}`] = 123_000_000;
    for (let i = 0; i < 10; i++) full[`m_provider/model-name-${i}`] = 45_678_901;
    full.p_waited = 100;
    await rollups.addToRollup({ minute, counters: full, expiresAtEpoch: 4_000_000_000 });
    counting = true;
    await rollups.addToRollup({ minute, counters: { c_succeeded: 1, h_4: 1, t_tool_number_3: 7_000_000 }, expiresAtEpoch: 4_000_000_000 });
    counting = false;
    const itemBytes = Object.entries(full).reduce((sum, [k]) => sum + k.length + 21, 100 + 40);
    const perWrite = units * PRICES.dynamoWriteUnit;
    const callsPerWrite = Math.max(1, (callsPerSecondPerProcess * ROLLUP_FLUSH_MS) / 1000);
    const storageMonth = ((itemBytes * MINUTES_A_MONTH) / 1e9) * STORAGE_GB_MONTH_USD;
    return `overview rollups: ${units} write unit(s) a write on a full minute's item (about ${itemBytes} bytes), at most one write per process every ${ROLLUP_FLUSH_MS / 1000} s: $${((perWrite * 1e6) / callsPerWrite).toFixed(3)} per million calls at ${callsPerSecondPerProcess} calls a second per process ($${(perWrite * 1e6).toFixed(3)} per million for calls after a quiet spell, each written alone); storage one item a minute, about $${storageMonth.toFixed(4)} a month whatever the traffic`;
  } finally {
    client.middlewareStack.remove(name);
  }
}
