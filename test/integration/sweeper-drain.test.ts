import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { makeDocumentClient, makeDynamoStore } from '../../functions/adapters/dynamo-store';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { LEASE_MARGIN_MS } from '../../functions/core/leases';
import type { RunRecord } from '../../functions/core/model';
import type { Deps, LifecyclePort } from '../../functions/core/ports';
import { makeSweeper } from '../../functions/handlers/sweeper';
import { FUNCTIONS } from '../../infra/functions';
import { SWEEPER_PARTS } from '../../infra/tool-runner';
import { ensureTables, localClient } from '../../local/dynamodb-local';
import { lostOperations } from '../support/records';

/**
 * The sweeper at scale, against DynamoDB Local: operations whose executions were all lost at once (an incident,
 * a state machine replaced) are resumed by the deployed schedule's invocations (one a minute per part, each with
 * the function's timeout), with StartExecution counted instead of run. `SWEEP_DRAIN_OPERATIONS` sets how many
 * (default 2,000 here; docs/benchmarks.md gives the figure at 10,000). The target: 10,000 within 15 minutes,
 * so within 15 scheduled rounds.
 */
const OPERATIONS = Number(process.env.SWEEP_DRAIN_OPERATIONS ?? 2000);
const ROUNDS = 15;

const client = localClient(inject('dynamoEndpoint'));
afterAll(() => client.destroy());

async function freshTables(): Promise<TableNames> {
  const prefix = `d${randomBytes(4).toString('hex')}`;
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  await ensureTables(client, tables);
  return tables;
}

async function inBatches<T>(items: readonly T[], width: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await task(items[next++]);
    }),
  );
}

describe('the sweeper at scale', () => {
  it(`resumes ${OPERATIONS} operations lost at once within ${ROUNDS} scheduled rounds, each exactly once`, {
    timeout: 900_000,
  }, async () => {
    const store = makeDynamoStore(makeDocumentClient(client), await freshTables());
    const lostAt = new Date(Date.now() - 5 * 60_000).toISOString();
    const ops = lostOperations(OPERATIONS, lostAt);
    const seeding = Date.now();
    await inBatches(ops, 32, (op) =>
      store.createOperation({
        run: { runId: 'run_drain' } as RunRecord,
        runChange: { kind: 'none' },
        op,
        events: [{ type: 'operation.proposed' }],
      }),
    );
    const seededMs = Date.now() - seeding;

    const started = new Map<string, number>();
    /** When each operation's executions started: a second only once the first resumption's lease could have passed. */
    const startedAt = new Map<string, number[]>();
    let stopped = 0;
    const lifecycle: LifecyclePort = {
      async start(input) {
        started.set(input.operationId, (started.get(input.operationId) ?? 0) + 1);
        startedAt.set(input.operationId, [...(startedAt.get(input.operationId) ?? []), Date.now()]);
      },
      async stop() {
        stopped++;
      },
      async sendTaskSuccess() {},
      async sendTaskFailure() {},
    };
    const deps = {
      store,
      lifecycle,
      tools: new Map(),
      // The deployed sweeper's part 0 also reads the config for approval escalation (none here).
      config: async () => ({ principals: [], approvalSecret: 's'.repeat(32) }),
      now: Date.now,
      random: Math.random,
      publicBaseUrl: 'http://localhost',
    } as unknown as Deps;
    const sweeper = makeSweeper(() => deps);
    const timeoutMs = FUNCTIONS.Sweeper.timeoutSeconds * 1000;

    const draining = Date.now();
    const perRound: number[] = [];
    for (let round = 0; round < ROUNDS && started.size < OPERATIONS; round++) {
      const before = started.size;
      const invoked = Date.now();
      const context = { getRemainingTimeInMillis: () => timeoutMs - (Date.now() - invoked) };
      const answers = await Promise.all(
        Array.from({ length: SWEEPER_PARTS }, (_, part) => sweeper({ part, parts: SWEEPER_PARTS }, context)),
      );
      // Each invocation stops taking work 20 s before its timeout: it ends within it.
      expect(Date.now() - invoked).toBeLessThan(timeoutMs);
      expect(answers.every((a) => a.parts === SWEEPER_PARTS)).toBe(true);
      perRound.push(started.size - before);
    }
    const drainedMs = Date.now() - draining;
    console.log(
      `sweeper drain: ${OPERATIONS} operations in ${perRound.length} rounds of ${SWEEPER_PARTS} parallel invocations, ` +
        `${(drainedMs / 1000).toFixed(1)} s of sweeping (${Math.round(OPERATIONS / (drainedMs / 1000))} a second; seeded in ` +
        `${(seededMs / 1000).toFixed(1)} s); resumed per round: ${perRound.join(', ')}`,
    );

    expect(started.size).toBe(OPERATIONS);
    // Nothing runs the executions started here, so a resumption's lease may pass and the operation be resumed
    // again; never while that lease is live.
    const early = [...startedAt.values()].filter((times) => times.some((t, i) => i > 0 && t - times[i - 1] < LEASE_MARGIN_MS));
    expect(early).toEqual([]);
    expect(stopped).toBe([...started.values()].reduce((a, b) => a + b, 0));
    expect(perRound.length).toBeLessThanOrEqual(ROUNDS);
    const resumed = await store.getOperation(ops[0].operationId);
    expect(resumed?.resumes).toBeGreaterThanOrEqual(1);
  });
});
