import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { makeDocumentClient, makeDynamoStore } from '../../functions/adapters/dynamo-store';
import { INDEX, TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { SCHEMA_VERSION, type RunRecord } from '../../functions/core/model';
import type { Store } from '../../functions/core/ports';
import { ensureTables, localClient } from '../../local/dynamodb-local';
import { memoryStore } from '../support/memory-store';

const client = localClient(inject('dynamoEndpoint'));
afterAll(() => client.destroy());

async function dynamoTables(): Promise<TableNames> {
  const prefix = `l${randomBytes(4).toString('hex')}`;
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  await ensureTables(client, tables);
  return tables;
}

const base = Date.parse('2026-01-01T00:00:00Z');
let made = 0;
/** Runs made one second apart, so their order is their creation order. */
function newRun(principalId: string, status: RunRecord['status'] = 'open'): RunRecord {
  const createdAt = new Date(base + 1000 * made++).toISOString();
  return {
    schemaVersion: SCHEMA_VERSION,
    runId: `run_${randomBytes(6).toString('hex')}`,
    principalId,
    status,
    budgets: { maxTurns: 5, maxToolCalls: 5, maxWallClockSeconds: 60, maxSpendCents: 0 },
    usage: { turns: 0, toolCalls: 0, spendCents: 0 },
    lastTurn: 0,
    createdAt,
    updatedAt: createdAt,
    deadlineAt: new Date(Date.parse(createdAt) + 60_000).toISOString(),
  };
}

async function allPages(store: Store, limit: number, matches?: (run: RunRecord) => boolean): Promise<RunRecord[][]> {
  const pages: RunRecord[][] = [];
  let after: Record<string, string> | undefined;
  do {
    const page = await store.listRuns({ limit, after, matches });
    pages.push(page.items);
    after = page.nextKey;
  } while (after);
  return pages;
}

describe.each([
  ['DynamoDB Local', async () => makeDynamoStore(makeDocumentClient(client), await dynamoTables())],
  ['in memory', async () => memoryStore()],
])('runs list: %s', (_name, make) => {
  it('lists runs newest first in pages that cover each run once, filtered on the runs read', async () => {
    const store = await make();
    const runs = [
      newRun('a'),
      newRun('b'),
      newRun('a', 'cancelled'),
      newRun('a'),
      newRun('b', 'budget_exhausted'),
      newRun('a'),
      newRun('a'),
    ];
    for (const run of runs) await store.putNewRun(run);
    const newestFirst = [...runs].reverse();

    const whole = await store.listRuns({ limit: 100 });
    expect(whole.items).toEqual(newestFirst);
    expect(whole.nextKey).toBeUndefined();

    const byThree = await allPages(store, 3);
    expect(byThree.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(byThree.flat()).toEqual(newestFirst);
    // A page that ends exactly at the last run says there is no more.
    expect((await allPages(store, 7)).map((p) => p.length)).toEqual([7]);

    const ownOpen = (run: RunRecord) => run.principalId === 'a' && run.status === 'open';
    const pages = await allPages(store, 2, ownOpen);
    expect(pages.flat().map((r) => r.runId)).toEqual(newestFirst.filter(ownOpen).map((r) => r.runId));
    expect(pages.every((p) => p.length <= 2)).toBe(true);
    expect((await store.listRuns({ limit: 10, matches: () => false })).items).toEqual([]);
  });
});

describe('runs list on DynamoDB: what it costs', () => {
  it('writes the index once per run, never again for a call’s admission', async () => {
    const tables = await dynamoTables();
    // The store's own writes, each asked for what it cost per index.
    const counted = localClient(inject('dynamoEndpoint'));
    const indexUnits: number[] = [];
    counted.middlewareStack.add(
      (next) => async (args) => {
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
        const out = await next(args);
        const consumed = [(out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity ?? []].flat() as {
          TableName?: string;
          GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
        }[];
        const runs = consumed.filter((c) => c.TableName === tables.runs);
        indexUnits.push(runs.reduce((sum, c) => sum + (c.GlobalSecondaryIndexes?.[INDEX.runsByCreation]?.CapacityUnits ?? 0), 0));
        return out;
      },
      { step: 'initialize', name: 'indexUnits' },
    );
    try {
      const store = makeDynamoStore(makeDocumentClient(counted), tables);
      const run = { ...newRun('a'), budgets: { maxTurns: 5, maxToolCalls: 5, maxWallClockSeconds: 3600, maxSpendCents: 0 } };
      await store.putNewRun(run);
      expect(indexUnits.reduce((a, b) => a + b, 0)).toBe(1);
      indexUnits.length = 0;
      for (const callId of ['call_1', 'call_2', 'call_3']) {
        const op = {
          schemaVersion: SCHEMA_VERSION,
          operationId: `op_${randomBytes(6).toString('hex')}`,
          runId: run.runId,
          callId,
          turn: 1,
          toolName: 't',
          principalId: 'a',
          state: 'proposed' as const,
          rawArguments: '{}',
          inputHash: 'sha256:x',
          idempotencyKey: 'idk_x',
          attempts: 0,
          createdAt: run.createdAt,
          updatedAt: '',
          version: 0,
          resumes: 0,
        };
        const current = (await store.getRun(run.runId))!;
        await store.createOperation({
          run: current,
          runChange: { kind: 'admit', delta: { turn: 1, opensTurn: callId === 'call_1', costCents: 0 }, now: Date.parse(run.createdAt) },
          op,
          events: [{ type: 'operation.proposed', operationId: op.operationId }],
        });
      }
      expect((await store.getRun(run.runId))!.usage.toolCalls).toBe(3);
      expect(indexUnits.reduce((a, b) => a + b, 0)).toBe(0);
    } finally {
      counted.destroy();
    }
  });
});
