import { randomBytes, randomInt } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { ITEM_FORMAT } from '../../functions/adapters/dynamo-operation-items';
import { makeDocumentClient, makeDynamoStore } from '../../functions/adapters/dynamo-store';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { hashValue } from '../../functions/core/canonical';
import { envelopeFor } from '../../functions/core/envelope';
import { newIdempotencyKey } from '../../functions/core/ids';
import { SCHEMA_VERSION, type OperationRecord, type RunRecord } from '../../functions/core/model';
import { OperationConflictError, OperationExistsError, RunChangedError, type Store } from '../../functions/core/ports';
import { ensureTables, localClient } from '../../local/dynamodb-local';
import { ITEM_OVERHEAD_BYTES, itemBytes } from '../../bench/storage-cost';
import { memoryStore } from '../support/memory-store';

const client = localClient(inject('dynamoEndpoint'));
afterAll(() => client.destroy());

/** A set of tables of its own for one test. */
async function freshTables(): Promise<TableNames> {
  const prefix = `s${randomBytes(4).toString('hex')}`;
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  await ensureTables(client, tables);
  return tables;
}

async function dynamoStore(): Promise<Store> {
  return makeDynamoStore(makeDocumentClient(client), await freshTables());
}

const now = Date.now();
const newRun = (budgets: Partial<RunRecord['budgets']> = {}): RunRecord => ({
  schemaVersion: SCHEMA_VERSION,
  runId: `run_${randomBytes(6).toString('hex')}`,
  principalId: 'p',
  status: 'open',
  budgets: { maxTurns: 5, maxToolCalls: 5, maxWallClockSeconds: 60, maxSpendCents: 0, ...budgets },
  usage: { turns: 0, toolCalls: 0, spendCents: 0 },
  lastTurn: 0,
  createdAt: new Date(now).toISOString(),
  updatedAt: new Date(now).toISOString(),
  deadlineAt: new Date(now + 60_000).toISOString(),
});
const newOp = (runId: string, callId = 'call_1'): OperationRecord => ({
  schemaVersion: SCHEMA_VERSION,
  operationId: `op_${randomBytes(6).toString('hex')}`,
  runId,
  callId,
  turn: 1,
  toolName: 't',
  principalId: 'p',
  state: 'proposed',
  rawArguments: '{}',
  inputHash: 'sha256:x',
  idempotencyKey: 'idk_x',
  attempts: 0,
  createdAt: new Date(now).toISOString(),
  updatedAt: '',
  version: 0,
  resumes: 0,
  leaseUntil: new Date(now).toISOString(),
});
const proposal = [{ type: 'operation.proposed' as const }];
const at = (ms: number) => new Date(Date.now() + ms).toISOString();
const admit = (turn = 1, opensTurn = true) => ({ kind: 'admit' as const, delta: { turn, opensTurn, costCents: 0 }, now });

/** One contract, two implementations: the in-memory store the model-based tests use must behave like DynamoDB's. */
describe.each([
  ['DynamoDB Local', dynamoStore],
  ['in memory', async () => memoryStore()],
])('store contract: %s', (_name, make) => {
  it('creates an operation with its admission and numbered events in one write', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const op = newOp(run.runId);
    const out = await store.createOperation({
      run,
      runChange: admit(),
      op,
      events: [
        { type: 'operation.proposed', operationId: op.operationId },
        { type: 'policy.decision', operationId: op.operationId },
      ],
    });
    expect(out.op.version).toBe(1);
    const created = await store.listEvents(run.runId);
    expect(created.map((e) => e.type)).toEqual(['operation.proposed', 'policy.decision']);
    expect(created[1].seq).toBe(created[0].seq + 1);
    expect((await store.getRun(run.runId))!.usage).toEqual({ turns: 1, toolCalls: 1, spendCents: 0 });
    expect((await store.listOperationsOfRun(run.runId)).map((o) => o.operationId)).toEqual([op.operationId]);
    expect(
      (await store.listExpiredLeases(new Date().toISOString(), 1000, { ignoreLeases: true })).some((o) => o.operationId === op.operationId),
    ).toBe(true);
    // A second create of the same id fails and says what exists: one logical operation per (runId, callId).
    const again = await store.createOperation({ run, runChange: admit(1, false), op, events: proposal }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(OperationExistsError);
    expect((await store.getRun(run.runId))!.usage.toolCalls).toBe(1);
  });

  it('appends events that change no record after the ones already there, numbered on, with their run', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const op = newOp(run.runId);
    await store.createOperation({ run, runChange: admit(), op, events: [{ type: 'operation.proposed', operationId: op.operationId }] });
    const appended = await store.appendRunEvents(
      run.runId,
      [
        { type: 'operation.replayed', operationId: op.operationId, callId: op.callId, detail: { inputHash: 'sha256:x' } },
        {
          type: 'call.conflict',
          operationId: op.operationId,
          callId: op.callId,
          detail: { storedInputHash: 'sha256:x', submittedInputHash: 'sha256:y' },
        },
      ],
      undefined,
    );
    expect(appended.map((e) => [e.type, e.runId])).toEqual([
      ['operation.replayed', run.runId],
      ['call.conflict', run.runId],
    ]);
    expect(await store.appendRunEvents(run.runId, [], undefined)).toEqual([]);
    const events = await store.listEvents(run.runId);
    expect(events.map((e) => e.type)).toEqual(['operation.proposed', 'operation.replayed', 'call.conflict']);
    expect(events.map((e) => e.seq)).toEqual([events[0].seq, ...appended.map((e) => e.seq)]);
    expect(events[1].seq).toBeGreaterThan(events[0].seq);
    expect(events[2].seq).toBe(events[1].seq + 1);
    expect(events[2].detail).toEqual({ storedInputHash: 'sha256:x', submittedInputHash: 'sha256:y' });
    // The operation itself did not move.
    expect((await store.getOperation(op.operationId))!.version).toBe(1);
  });

  it('refuses a move from a stale (state, version) and says what is there now', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const created = (await store.createOperation({ run, runChange: admit(), op: newOp(run.runId), events: proposal })).op;
    await store.updateOperation(created, { ...created, state: 'validated' }, [
      { type: 'state.transition', from: 'proposed', to: 'validated' },
    ]);
    const stale = await store.updateOperation(created, { ...created, state: 'rejected' }, []).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(OperationConflictError);
    expect((stale as OperationConflictError).current?.state).toBe('validated');
  });

  it('admits exactly the budget under concurrency, conditional on the budget fields only', async () => {
    const store = await make();
    const run = newRun({ maxToolCalls: 3 });
    await store.putNewRun(run);
    const results = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        for (;;) {
          const current = (await store.getRun(run.runId))!;
          if (current.usage.toolCalls >= 3) return 'refused';
          try {
            await store.createOperation({
              run: current,
              runChange: admit(1, current.lastTurn < 1),
              op: newOp(run.runId, `call_${i}`),
              events: [{ type: 'operation.proposed' }],
            });
            return 'admitted';
          } catch (error) {
            if (!(error instanceof RunChangedError) && (error as Error).name !== 'ContentionError') throw error;
          }
        }
      }),
    );
    expect(results.filter((r) => r === 'admitted')).toHaveLength(3);
    expect((await store.getRun(run.runId))!.usage).toMatchObject({ toolCalls: 3, turns: 1 });
    const seqs = (await store.listEvents(run.runId)).map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(3);
  });

  it('changes a run status only from the status read', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const closed = await store.updateRunStatus(run, 'cancelled', [{ type: 'run.cancelled' }]);
    expect(closed.status).toBe('cancelled');
    await expect(store.updateRunStatus(run, 'budget_exhausted', [])).rejects.toBeInstanceOf(RunChangedError);
    await expect(store.createOperation({ run, runChange: admit(), op: newOp(run.runId), events: proposal })).rejects.toBeInstanceOf(
      RunChangedError,
    );
  });

  it('gives back the arguments as written, the JSON text as sent or the frozen form', async () => {
    const store = await make();
    const run = newRun({ maxToolCalls: 10 });
    await store.putNewRun(run);
    const frozen = '{"amount":1000,"currency":"USD"}';
    for (const [i, args] of [
      { rawArguments: '{ "amount": 1000, "currency": "USD" }' },
      { frozenArguments: frozen },
      { rawArguments: '{"currency":"USD","amount":1000}' },
    ].entries()) {
      const { rawArguments: _r, frozenArguments: _f, ...bare } = newOp(run.runId, `raw_${i}`);
      const op = { ...bare, ...args };
      await store.createOperation({ run: (await store.getRun(run.runId))!, runChange: admit(1, i === 0), op, events: proposal });
      const read = (await store.getOperation(op.operationId))!;
      expect(read.rawArguments).toBe(args.rawArguments);
      expect(read.frozenArguments).toBe(args.frozenArguments);
    }
  });

  it('shows the events of the write that won a race for a version, never those of the one that lost', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const created = (await store.createOperation({ run, runChange: admit(), op: newOp(run.runId), events: proposal })).op;
    const moves = await Promise.allSettled([
      store.updateOperation(created, { ...created, state: 'validated' }, [{ type: 'state.transition', from: 'proposed', to: 'validated' }]),
      store.updateOperation(created, { ...created, state: 'rejected' }, [{ type: 'state.transition', from: 'proposed', to: 'rejected' }]),
    ]);
    expect(moves.filter((m) => m.status === 'fulfilled')).toHaveLength(1);
    const won = (await store.getOperation(created.operationId))!;
    const events = await store.listEvents(run.runId);
    expect(events.map((e) => [e.type, e.to])).toEqual([
      ['operation.proposed', undefined],
      ['state.transition', won.state],
    ]);
    // The next write keeps the blocks of the writes before it.
    const next = await store.updateOperation(won, { ...won }, [{ type: 'policy.decision' }]);
    expect((await store.listEvents(run.runId)).map((e) => e.type)).toEqual(['operation.proposed', 'state.transition', 'policy.decision']);
    expect((await store.listOperationsOfRun(run.runId)).map((o) => [o.operationId, o.version])).toEqual([
      [created.operationId, next.op.version],
    ]);
  });

  it('lists an active operation once its lease passes, again while nobody claims it, never before and never once settled', async () => {
    const store = await make();
    const run = newRun();
    await store.putNewRun(run);
    const create = async (callId: string, leaseMs: number) =>
      (
        await store.createOperation({
          run,
          runChange: admit(1, callId === 'a'),
          op: { ...newOp(run.runId, callId), leaseUntil: at(leaseMs) },
          events: proposal,
        })
      ).op;
    const a = await create('a', 60_000);
    const b = await create('b', 60_000);
    const c = await create('c', 600_000);
    await store.updateOperation(b, { ...b, state: 'rejected', envelope: { status: 'rejected' } as OperationRecord['envelope'] }, []);
    const due = async (ms: number) => (await store.listExpiredLeases(at(ms), 100)).map((o) => o.callId).sort();
    expect(await due(0)).toEqual([]);
    expect(await due(120_000)).toEqual(['a']);
    // Nobody claimed it: listed again.
    expect(await due(240_000)).toEqual(['a']);
    // Renewed further out: not due until that passes. Shortened: due at the shorter lease.
    const aNow = (await store.getOperation(a.operationId))!;
    await store.updateOperation(aNow, { ...aNow, leaseUntil: at(900_000) }, []);
    await store.updateOperation(c, { ...c, leaseUntil: at(300_000) }, []);
    expect(await due(360_000)).toEqual(['c']);
    expect(await due(1_000_000)).toEqual(['a', 'c']);
    expect((await store.listExpiredLeases(at(0), 100, { ignoreLeases: true })).map((o) => o.callId).sort()).toEqual(['a', 'c']);
  });

  it('lease locks: one holder at a time; an expired holder is taken over and cannot release the new lock', async () => {
    const store = await make();
    const key = `lock_${randomBytes(4).toString('hex')}`;
    const t0 = Date.now();
    expect(await store.acquireLock(key, 'A', 1000, t0)).toBe(true);
    expect(await store.acquireLock(key, 'B', 1000, t0 + 10)).toBe(false);
    expect(await store.acquireLock(key, 'A', 1000, t0 + 20)).toBe(true);
    expect(await store.acquireLock(key, 'B', 1000, t0 + 2000)).toBe(true);
    await store.releaseLock(key, 'A');
    expect(await store.acquireLock(key, 'C', 1000, t0 + 2100)).toBe(false);
    await store.releaseLock(key, 'B');
    expect(await store.acquireLock(key, 'C', 1000, t0 + 2200)).toBe(true);
  });

  it('rate counters: N concurrent takes against a limit of k admit exactly k; a count given back is taken again', async () => {
    const store = await make();
    const key = `ratelimit#s${randomBytes(4).toString('hex')}#2026-11-30T12:34`;
    const expires = Math.floor(Date.now() / 1000) + 600;
    const takes = await Promise.all(Array.from({ length: 24 }, () => store.takeRateCount(key, 5, expires)));
    expect(takes.filter(Boolean)).toHaveLength(5);
    expect(await store.takeRateCount(key, 5, expires)).toBe(false);
    await store.giveBackRateCount(key);
    expect(await store.takeRateCount(key, 5, expires)).toBe(true);
    expect(await store.takeRateCount(key, 5, expires)).toBe(false);
    // Another key (the next minute, another scope) counts from zero; a give-back never goes below zero.
    const other = `${key}x`;
    await store.giveBackRateCount(other);
    expect(await Promise.all([1, 2, 3].map(() => store.takeRateCount(other, 2, expires)))).toEqual(
      expect.arrayContaining([true, true, false]),
    );
  });

  it('rate slots: one holder each; concurrent takers of one slot get it once; a lapsed holder cannot free its successor', async () => {
    const store = await make();
    const key = `ratelimit-slot#s${randomBytes(4).toString('hex')}#0`;
    const t0 = Date.now();
    const racers = await Promise.all(['A', 'B', 'C', 'D'].map((holder) => store.takeRateSlot(key, holder, t0 + 1000, t0)));
    expect(racers.filter(Boolean)).toHaveLength(1);
    const holder = ['A', 'B', 'C', 'D'][racers.indexOf(true)];
    const other = holder === 'A' ? 'B' : 'A';
    expect(await store.takeRateSlot(key, holder, t0 + 1000, t0 + 10)).toBe(true);
    expect(await store.takeRateSlot(key, other, t0 + 1000, t0 + 10)).toBe(false);
    // Freed by its holder: free to anyone.
    await store.giveBackRateSlot(key, holder);
    expect(await store.takeRateSlot(key, other, t0 + 1000, t0 + 20)).toBe(true);
    // Its lease passed: taken over, and the lapsed holder's late release frees nothing.
    expect(await store.takeRateSlot(key, 'E', t0 + 5000, t0 + 2000)).toBe(true);
    await store.giveBackRateSlot(key, other);
    expect(await store.takeRateSlot(key, 'F', t0 + 5000, t0 + 2100)).toBe(false);
  });

  it("a principal's current MCP run: recorded once, replaced only from the run it names; of racing replaces one wins", async () => {
    const store = await make();
    const principal = `p${randomBytes(4).toString('hex')}`;
    expect(await store.currentMcpRun(principal)).toBeUndefined();
    expect(await store.replaceCurrentMcpRun(principal, undefined, 'run_a')).toBe(true);
    expect(await store.currentMcpRun(principal)).toBe('run_a');
    // A record exists now: "none yet" is stale.
    expect(await store.replaceCurrentMcpRun(principal, undefined, 'run_b')).toBe(false);
    expect(await store.currentMcpRun(principal)).toBe('run_a');
    expect(await store.replaceCurrentMcpRun(principal, 'run_a', 'run_c')).toBe(true);
    expect(await store.currentMcpRun(principal)).toBe('run_c');
    expect(await store.replaceCurrentMcpRun(principal, 'run_a', 'run_d')).toBe(false);
    expect(await store.currentMcpRun(principal)).toBe('run_c');
    // Ten requests that read the same record race to replace it: exactly one moves it.
    const racers = Array.from({ length: 10 }, (_, i) => `run_r${i}`);
    const moved = await Promise.all(racers.map((runId) => store.replaceCurrentMcpRun(principal, 'run_c', runId)));
    expect(moved.filter(Boolean)).toHaveLength(1);
    expect(await store.currentMcpRun(principal)).toBe(racers[moved.indexOf(true)]);
    // Each principal has a record of its own.
    expect(await store.currentMcpRun(`${principal}x`)).toBeUndefined();
  });

  it('rollups: concurrent additions to one minute add up; a read spans days and returns only the minutes asked for', async () => {
    const store = await make();
    // A year of its own per store run, so stores sharing DynamoDB Local's tables never see each other's minutes.
    const year = 2100 + randomInt(800);
    const minute = `${year}-03-01T23:59`;
    const next = `${year}-03-02T00:00`;
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.addToRollup({ minute, counters: { c_succeeded: 1, h_3: 1, ...(i < 2 ? { 't_a tool': 700 } : {}) }, expiresAtEpoch: 4e9 }),
      ),
    );
    await store.addToRollup({ minute: next, counters: { c_failed: 1, p_waited: 1, 'm_gpt-4.1': 25 } });
    await store.addToRollup({ minute: `${year}-03-02T00:02`, counters: { c_rejected: 1 } });
    const read = await store.readRollups(minute, `${year}-03-02T00:01`);
    expect(read.map((m) => m.minute)).toEqual([minute, next]);
    expect(read[0].calls).toMatchObject({ succeeded: 10, failed: 0 });
    expect(read[0].latency[3]).toBe(10);
    expect(read[0].toolSpendMicros).toEqual({ 'a tool': 1400 });
    expect(read[1]).toMatchObject({ calls: { failed: 1 }, waitedForPerson: 1, modelSpendMicros: { 'gpt-4.1': 25 } });
    expect(await store.readRollups(`${year}-03-03T00:00`, `${year}-03-03T23:59`)).toEqual([]);
  });

  it("a run's admission and status change set its updatedAt", async () => {
    const store = await make();
    const earlier = new Date(Date.now() - 60_000).toISOString();
    const run = { ...newRun(), updatedAt: earlier };
    await store.putNewRun(run);
    await store.createOperation({ run, runChange: admit(), op: newOp(run.runId), events: proposal });
    const admitted = (await store.getRun(run.runId))!;
    expect(admitted.usage.toolCalls).toBe(1);
    expect(admitted.updatedAt > earlier).toBe(true);
    const closed = await store.updateRunStatus(admitted, 'cancelled', []);
    expect((await store.getRun(run.runId))!.updatedAt).toBe(closed.updatedAt);
    expect(closed.updatedAt >= admitted.updatedAt).toBe(true);
  });
});

describe('DynamoDB store: what only DynamoDB can do', () => {
  it('a write whose answer was lost and that the SDK resent is its own success, not a conflict with itself', async () => {
    const tables = await freshTables();
    const lossy = localClient(inject('dynamoEndpoint'));
    let drop = 0;
    // Inside the SDK's retry loop: the put reaches DynamoDB, its answer does not.
    lossy.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (
          context.commandName === 'PutItemCommand' &&
          (args.input as { TableName?: string }).TableName === tables.operations &&
          drop > 0
        ) {
          drop--;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
        }
        return out;
      },
      { step: 'deserialize', name: 'loseAnswer' },
    );
    try {
      const store = makeDynamoStore(makeDocumentClient(lossy), tables);
      const run = newRun();
      await store.putNewRun(run);
      const created = (await store.createOperation({ run, runChange: { kind: 'none' }, op: newOp(run.runId), events: proposal })).op;
      drop = 1;
      const moved = await store.updateOperation(created, { ...created, state: 'validated' }, [
        { type: 'state.transition', from: 'proposed', to: 'validated' },
      ]);
      expect(drop).toBe(0);
      expect(moved.op.version).toBe(2);
      expect((await store.getOperation(created.operationId))!.state).toBe('validated');
      expect((await store.listEvents(run.runId)).map((e) => e.type)).toEqual(['operation.proposed', 'state.transition']);
    } finally {
      lossy.destroy();
    }
  });

  it('sweeps an operation written before the watch table through the legacy index, and watches it from its next write', async () => {
    const tables = await freshTables();
    const doc = makeDocumentClient(client);
    const store = makeDynamoStore(doc, tables);
    const run = newRun();
    await store.putNewRun(run);
    // As the previous release wrote it: in the active index, no trace names, no watch entry.
    const legacy = { ...newOp(run.runId), state: 'executing' as const, version: 3, updatedAt: at(0), leaseUntil: at(60_000) };
    await doc.send(new PutCommand({ TableName: tables.operations, Item: { ...legacy, activeKey: 'active' } }));
    const due = async (ms: number) => (await store.listExpiredLeases(at(ms), 100)).map((o) => o.operationId);
    expect(await due(0)).toEqual([]);
    expect(await due(120_000)).toEqual([legacy.operationId]);
    // Its next write takes it out of the legacy index and gives it a watch entry, even with a longer lease.
    const read = (await store.getOperation(legacy.operationId))!;
    await store.updateOperation(read, { ...read, leaseUntil: at(300_000) }, []);
    expect(await due(120_000)).toEqual([]);
    expect(await due(360_000)).toEqual([legacy.operationId]);
  });

  it('keeps arguments of 512 bytes or more in an item of their own, written once; a record that had them inline moves them at its next write', async () => {
    const tables = await freshTables();
    const counting = localClient(inject('dynamoEndpoint'));
    const argumentPuts: string[] = [];
    counting.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Item?: { operationId?: { S?: string } } }).Item?.operationId?.S;
        if (context.commandName === 'PutItemCommand' && key?.includes('#arguments')) argumentPuts.push(key);
        return next(args);
      },
      { step: 'build', name: 'countArgumentPuts' },
    );
    try {
      const doc = makeDocumentClient(counting);
      const store = makeDynamoStore(doc, tables);
      const run = newRun();
      await store.putNewRun(run);
      const frozen = JSON.stringify({ amount: 1000, note: randomBytes(600).toString('base64url') });
      const { rawArguments: _r, ...bare } = newOp(run.runId);
      const created = (
        await store.createOperation({ run, runChange: { kind: 'none' }, op: { ...bare, frozenArguments: frozen }, events: proposal })
      ).op;
      const item = (await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId: created.operationId } }))).Item!;
      expect(item.frozenArguments).toBeUndefined();
      expect(item.argumentsRef).toMatchObject({ field: 'frozenArguments', bytes: Buffer.byteLength(frozen), in: 'item' });
      expect(itemBytes(marshall(item)) - ITEM_OVERHEAD_BYTES).toBeLessThan(1024);
      // Written with the creation, not again by the next write of the record.
      const moved = (await store.updateOperation(created, { ...created, state: 'validated' }, [])).op;
      await store.updateOperation(moved, { ...moved, attempts: 1 }, []);
      expect(argumentPuts).toHaveLength(1);
      expect((await store.getOperation(created.operationId))!.frozenArguments).toBe(frozen);

      // As the previous release wrote it: the same arguments inline. Read back as they are; moved when next written.
      const legacy = {
        ...bare,
        operationId: `op_${randomBytes(6).toString('hex')}`,
        frozenArguments: frozen,
        version: 1,
        updatedAt: at(0),
      };
      await doc.send(new PutCommand({ TableName: tables.operations, Item: legacy }));
      const read = (await store.getOperation(legacy.operationId))!;
      expect(read.frozenArguments).toBe(frozen);
      await store.updateOperation(read, { ...read, state: 'validated' }, []);
      expect(argumentPuts).toHaveLength(2);
      const after = (await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId: legacy.operationId } }))).Item!;
      expect(after.frozenArguments).toBeUndefined();
      expect((await store.getOperation(legacy.operationId))!.frozenArguments).toBe(frozen);
    } finally {
      counting.destroy();
    }
  });

  it('keeps a succeeded record compact (what DynamoDB reads as attributes, the rest as one deflated body) and reads it back exactly as written', async () => {
    const tables = await freshTables();
    const doc = makeDocumentClient(client);
    const store = makeDynamoStore(doc, tables);
    const run = newRun();
    await store.putNewRun(run);
    const { rawArguments: _r, ...bare } = newOp(run.runId);
    // As submission writes it: requested by the run's owner.
    const op = {
      ...bare,
      requestedBy: 'p',
      frozenArguments: '{"orderId":"ord_1"}',
      inputHash: hashValue({ orderId: 'ord_1' }),
      idempotencyKey: newIdempotencyKey(),
    };
    const created = (await store.createOperation({ run, runChange: { kind: 'none' }, op, events: proposal })).op;
    const result = { bytes: 2, sha256: hashValue({}), json: '{}' };
    const outcome = { kind: 'succeeded' as const, result };
    const settled = {
      ...created,
      state: 'reported' as const,
      attempts: 1,
      outcome,
      lastAttempt: { attempt: 1, outcome: { kind: 'succeeded' as const }, latencyMs: 12, finishedAt: at(0) },
      envelope: envelopeFor(created, outcome),
    };
    const written = (await store.updateOperation(created, settled, [])).op;
    const item = (await doc.send(new GetCommand({ TableName: tables.operations, Key: { operationId: op.operationId } }))).Item!;
    const { writeId, body, ...plain } = item;
    expect(plain).toEqual({
      schemaVersion: ITEM_FORMAT,
      operationId: op.operationId,
      state: 'reported',
      version: 2,
      traceSeqs: written.traceSeqs,
    });
    expect(typeof writeId).toBe('string');
    expect(body).toBeInstanceOf(Uint8Array);
    expect(itemBytes(marshall(item)) - ITEM_OVERHEAD_BYTES).toBeLessThan(400);
    expect(await store.getOperation(op.operationId)).toEqual(written);
  });
});
