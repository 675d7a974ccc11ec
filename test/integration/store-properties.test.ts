import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { makeDocumentClient, makeDynamoStore } from '../../functions/adapters/dynamo-store';
import { REWATCH_MS } from '../../functions/adapters/dynamo-watch';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { SCHEMA_VERSION, type OperationRecord, type RunRecord } from '../../functions/core/model';
import type { Store } from '../../functions/core/ports';
import { ensureTables, localClient } from '../../local/dynamodb-local';
import { memoryStore } from '../support/memory-store';

/**
 * Properties of the store under random schedules, on DynamoDB Local and in memory alike: the sweeper's
 * listing (safe, and complete: an expired operation is listed at the first sweep after its lease, and again
 * every REWATCH_MS while nobody claims it) and the trace under racing writers (only the winners' events).
 * Seeded and replayable: STORE_SEED and STORE_RUNS.
 */
const SEED = Number(process.env.STORE_SEED ?? 20261130);
const RUNS = Number(process.env.STORE_RUNS ?? 25);

const client = localClient(inject('dynamoEndpoint'));
afterAll(() => client.destroy());

type MakeStore = (clock: () => number) => Promise<Store>;
const stores: [string, MakeStore][] = [
  [
    'DynamoDB Local',
    async (clock) => {
      const prefix = `p${randomBytes(4).toString('hex')}`;
      const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
      await ensureTables(client, tables);
      return makeDynamoStore(makeDocumentClient(client), tables, clock);
    },
  ],
  ['in memory', async (clock) => memoryStore(clock)],
];

const iso = (ms: number) => new Date(ms).toISOString();

function newRun(now: number): RunRecord {
  return {
    schemaVersion: SCHEMA_VERSION,
    runId: `run_${randomBytes(6).toString('hex')}`,
    principalId: 'p',
    status: 'open',
    budgets: { maxTurns: 5, maxToolCalls: 1000, maxWallClockSeconds: 86_400, maxSpendCents: 0 },
    usage: { turns: 0, toolCalls: 0, spendCents: 0 },
    lastTurn: 0,
    createdAt: iso(now),
    updatedAt: iso(now),
    deadlineAt: iso(now + 86_400_000),
  };
}

function newOp(runId: string, callId: string, now: number, leaseUntil: number): OperationRecord {
  return {
    schemaVersion: SCHEMA_VERSION,
    operationId: `op_${randomBytes(6).toString('hex')}`,
    runId,
    callId,
    turn: 1,
    toolName: 't',
    principalId: 'p',
    state: 'executing',
    rawArguments: '{}',
    inputHash: 'sha256:x',
    idempotencyKey: 'idk_x',
    attempts: 1,
    createdAt: iso(now),
    updatedAt: '',
    version: 0,
    resumes: 0,
    leaseUntil: iso(leaseUntil),
  };
}

const settled = { status: 'succeeded' } as OperationRecord['envelope'];

type Step =
  | { kind: 'create'; leaseMs: number }
  | { kind: 'renew'; pick: number; leaseMs: number }
  | { kind: 'settle'; pick: number }
  | { kind: 'sweep'; advanceMs: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), leaseMs: fc.integer({ min: 0, max: 300_000 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('renew' as const), pick: fc.nat(), leaseMs: fc.integer({ min: 0, max: 300_000 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('sweep' as const), advanceMs: fc.integer({ min: 0, max: 150_000 }) }) },
);

describe.each(stores)('store properties: %s', (_name, make) => {
  it('lists every active operation whose lease passed, at the first sweep after, and again while unclaimed; nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 30 }), async (steps) => {
        const t0 = Date.now();
        let t = 0;
        const store = await make(() => t0 + t);
        const run = newRun(t0);
        await store.putNewRun(run);
        const model: { id: string; active: boolean; lease: number; listedAt?: number }[] = [];
        const write = async (i: number, change: Partial<OperationRecord>) => {
          const before = (await store.getOperation(model[i].id))!;
          await store.updateOperation(before, { ...before, ...change }, []);
          // A write is a fresh start for the sweeper: what it listed before no longer stands.
          model[i].listedAt = undefined;
        };
        for (const s of steps) {
          if (s.kind === 'create') {
            const current = (await store.getRun(run.runId))!;
            const op = newOp(run.runId, `c${model.length}`, t0 + t, t0 + t + s.leaseMs);
            await store.createOperation({
              run: current,
              runChange: { kind: 'admit', delta: { turn: 1, opensTurn: current.lastTurn < 1, costCents: 0 }, now: t0 + t },
              op,
              events: [{ type: 'operation.proposed' }],
            });
            model.push({ id: op.operationId, active: true, lease: t + s.leaseMs });
          } else if (s.kind === 'renew' && model.some((m) => m.active)) {
            const i = model.findIndex((m, n) => m.active && n >= s.pick % model.length);
            const at = i < 0 ? model.findIndex((m) => m.active) : i;
            await write(at, { leaseUntil: iso(t0 + t + s.leaseMs) });
            model[at].lease = t + s.leaseMs;
          } else if (s.kind === 'settle' && model.some((m) => m.active)) {
            const at = model.findIndex((m) => m.active);
            await write(at, { state: 'reported', envelope: settled });
            model[at].active = false;
          } else if (s.kind === 'sweep') {
            t += s.advanceMs;
            const listed = new Set((await store.listExpiredLeases(iso(t0 + t), 1000)).map((o) => o.operationId));
            for (const m of model) {
              const expired = m.active && m.lease < t;
              if (listed.has(m.id)) expect(expired, 'listed only when active and past its lease').toBe(true);
              const owed = expired && (m.listedAt === undefined || t >= m.listedAt + REWATCH_MS);
              if (owed) expect(listed.has(m.id), `expired at ${m.lease}, swept at ${t}, last listed at ${m.listedAt}`).toBe(true);
              if (listed.has(m.id)) m.listedAt = t;
            }
          }
        }
        // A runtime that knows none of its executions survived sees every active operation.
        const all = (await store.listExpiredLeases(iso(t0 + t), 1000, { ignoreLeases: true })).map((o) => o.operationId).sort();
        expect(all).toEqual(
          model
            .filter((m) => m.active)
            .map((m) => m.id)
            .sort(),
        );
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  }, 120_000);

  it('shows, for each operation, exactly the events of the writes that won, in order, whoever raced them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 8 }), async (racers) => {
        const store = await make(Date.now);
        const run = newRun(Date.now());
        await store.putNewRun(run);
        const op = newOp(run.runId, 'c0', Date.now(), Date.now() + 60_000);
        await store.createOperation({
          run,
          runChange: { kind: 'admit', delta: { turn: 1, opensTurn: true, costCents: 0 }, now: Date.now() },
          op,
          events: [{ type: 'operation.proposed' }],
        });
        const expected = ['operation.proposed'];
        for (const [round, writers] of racers.entries()) {
          const before = (await store.getOperation(op.operationId))!;
          const outcomes = await Promise.allSettled(
            Array.from({ length: writers }, (_, w) =>
              store.updateOperation(before, { ...before, attempts: before.attempts + 1 }, [
                { type: 'state.transition', detail: { round, writer: w } },
              ]),
            ),
          );
          const won = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
          expect(won).toHaveLength(1);
          expected.push(`state.transition:${round}:${(won[0].events[0].detail as { writer: number }).writer}`);
        }
        const shown = (await store.listEvents(run.runId)).map((e) =>
          e.detail ? `${e.type}:${(e.detail as { round: number }).round}:${(e.detail as { writer: number }).writer}` : e.type,
        );
        expect(shown).toEqual(expected);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  }, 120_000);
});
