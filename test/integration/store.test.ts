import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { makeDocumentClient, makeDynamoStore, OperationConflictError, RunConflictError, type Store } from '../../functions/adapters/dynamo-store';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { SCHEMA_VERSION, type OperationRecord, type RunRecord } from '../../functions/core/model';
import { ensureTables, localClient } from '../../local/dynamodb-local';

let store: Store;
const client = localClient(inject('dynamoEndpoint'));
beforeAll(async () => {
  const prefix = `s${randomBytes(4).toString('hex')}`;
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  await ensureTables(client, tables);
  store = makeDynamoStore(makeDocumentClient(client), tables);
});
afterAll(() => client.destroy());

const now = new Date().toISOString();
const newRun = (): RunRecord => ({
  schemaVersion: SCHEMA_VERSION, runId: `run_${randomBytes(6).toString('hex')}`, principalId: 'p', status: 'open',
  budgets: { maxTurns: 5, maxToolCalls: 5, maxWallClockSeconds: 60, maxSpendCents: 0 }, usage: { turns: 0, toolCalls: 0, spendCents: 0 },
  lastTurn: 0, createdAt: now, updatedAt: now, deadlineAt: now, seq: 0,
});
const newOp = (runId: string): OperationRecord => ({
  schemaVersion: SCHEMA_VERSION, operationId: `op_${randomBytes(6).toString('hex')}`, runId, callId: 'call_1', turn: 1, toolName: 't', principalId: 'p',
  state: 'proposed', rawArguments: {}, inputHash: 'sha256:x', idempotencyKey: 'idk_x', attempts: 0, createdAt: now, updatedAt: now, version: 0, resumes: 0, leaseUntil: now,
});

describe('DynamoDB store (DynamoDB Local)', () => {
  it('commits run, operation and numbered events in one transaction', async () => {
    const run = newRun();
    await store.putNewRun(run);
    const op = newOp(run.runId);
    const out = await store.commit({ run: { before: run, after: run }, ops: [{ after: op }], events: [{ type: 'operation.proposed', operationId: op.operationId }, { type: 'policy.decision', operationId: op.operationId }] });
    expect(out.run.seq).toBe(2);
    expect(out.ops[0].version).toBe(1);
    expect((await store.listEvents(run.runId)).map((e) => [e.seq, e.type])).toEqual([[1, 'operation.proposed'], [2, 'policy.decision']]);
    expect((await store.listOperationsOfRun(run.runId)).map((o) => o.operationId)).toEqual([op.operationId]);
    // Sparse index: an active operation is visible to the sweeper once its lease has passed.
    expect((await store.listExpiredLeases('9999', 1000)).some((o) => o.operationId === op.operationId)).toBe(true);
  });

  it('refuses a write based on a stale run (sequence) or a stale operation (state, version)', async () => {
    const run = newRun();
    await store.putNewRun(run);
    const op = newOp(run.runId);
    const first = await store.commit({ run: { before: run, after: run }, ops: [{ after: op }], events: [{ type: 'operation.proposed' }] });
    await expect(store.commit({ run: { before: run, after: run }, events: [{ type: 'run.cancelled' }] })).rejects.toBeInstanceOf(RunConflictError);
    const stored = first.ops[0];
    await store.commit({ run: { before: first.run, after: first.run }, ops: [{ before: stored, after: { ...stored, state: 'validated' } }], events: [] });
    const stale = store.commit({ run: { before: first.run, after: first.run }, ops: [{ before: stored, after: { ...stored, state: 'rejected' } }], events: [] });
    await expect(stale).rejects.toBeInstanceOf(OperationConflictError);
    const error = (await stale.catch((e: unknown) => e)) as OperationConflictError;
    expect(error.current?.state).toBe('validated');
    // A second create of the same operation id fails: one logical operation per (runId, callId).
    await expect(store.commit({ run: { before: first.run, after: first.run }, ops: [{ after: op }], events: [] })).rejects.toBeInstanceOf(OperationConflictError);
    expect((await store.getOperation(op.operationId))!.state).toBe('validated');
  });

  it('concurrent commits on one run keep a gapless, strictly increasing sequence', async () => {
    const run = newRun();
    await store.putNewRun(run);
    const writers = Array.from({ length: 6 }, async (_, i) => {
      for (;;) {
        const current = (await store.getRun(run.runId))!;
        try {
          return await store.commit({ run: { before: current, after: current }, events: [{ type: 'attempt.started', attempt: i }] });
        } catch (error) {
          if (!(error instanceof RunConflictError)) throw error;
        }
      }
    });
    await Promise.all(writers);
    const events = await store.listEvents(run.runId);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(events.map((e) => e.attempt)).size).toBe(6);
  });

  it('lease locks: one holder at a time; an expired holder is taken over and cannot release the new lock', async () => {
    const key = `lock_${randomBytes(4).toString('hex')}`;
    const t0 = Date.now();
    expect(await store.acquireLock(key, 'A', 1000, t0)).toBe(true);
    expect(await store.acquireLock(key, 'B', 1000, t0 + 10)).toBe(false);
    expect(await store.acquireLock(key, 'A', 1000, t0 + 20)).toBe(true);
    // A crashed: its lease passes and B takes over.
    expect(await store.acquireLock(key, 'B', 1000, t0 + 2000)).toBe(true);
    await store.releaseLock(key, 'A');
    expect(await store.acquireLock(key, 'C', 1000, t0 + 2100)).toBe(false);
    await store.releaseLock(key, 'B');
    expect(await store.acquireLock(key, 'C', 1000, t0 + 2200)).toBe(true);
  });
});
