import { describe, expect, it } from 'vitest';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import type { Principal } from '../../functions/core/model';
import type { LifecyclePort } from '../../functions/core/ports';
import { executeAttempt } from '../../functions/steps/execute';
import { reconcileOutcome } from '../../functions/steps/reconcile';
import { coreDeps, idleLifecycle, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/**
 * A step returns the record it left, and the API's own first attempt answers from that return: the waiting
 * request needs neither a listener on the store's writes nor a read of the record.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const budgets = { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 };

function harness(lifecycle: LifecyclePort = idleLifecycle) {
  const clock = Date.parse('2026-12-07T09:00:00Z');
  const store = memoryStore(() => clock);
  const read = toolSpec({ name: 'get_order', risk: 'read', timeoutMs: 1_000, execute: async () => ({ id: 'ord_1' }) });
  const deps = { ...coreDeps(store, [read], () => clock), lifecycle };
  const submit = async (waitSeconds?: number) => {
    const run = await createRun(deps, agent, budgets);
    const call = { callId: 'call_1', turn: 1, name: 'get_order', arguments: { amount: 1 } };
    const submitted = await submitToolCall(deps, run, agent, call, { waitSeconds });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    return submitted;
  };
  return { deps, store, submit };
}

describe('steps return the record they left', () => {
  it('Execute returns where to go next and the record it wrote, the same version the store holds', async () => {
    const { deps, store, submit } = harness();
    const { op } = await submit();
    const { output, op: left } = await executeAttempt(deps, op.operationId);
    expect(output).toEqual({ operationId: op.operationId, next: 'done' });
    expect(left).toEqual(await store.getOperation(op.operationId));
    expect(left).toMatchObject({ state: 'reported', attempts: 1, outcome: { kind: 'succeeded' } });
  });

  it('a step with nothing to write returns the record as it read it', async () => {
    const { deps, store, submit } = harness();
    const { op } = await submit();
    await executeAttempt(deps, op.operationId);
    const settled = (await store.getOperation(op.operationId))!;
    expect(await reconcileOutcome(deps, op.operationId)).toEqual({ output: { operationId: op.operationId, next: 'done' }, op: settled });
  });

  it("the API's own first attempt resolves with the record the attempt returned, without reading it back", async () => {
    const startSync: LifecyclePort['startSync'] = async () => {
      throw new Error('a settled first attempt needs no execution');
    };
    const { store, submit } = harness({ ...idleLifecycle, startSync });
    const reads: string[] = [];
    const getOperation = store.getOperation.bind(store);
    store.getOperation = async (id) => {
      reads.push(id);
      return getOperation(id);
    };
    const submitted = await submit(10);
    expect(submitted.inline).toBe(true);
    const finished = await submitted.finished;
    expect(reads).toEqual([]);
    expect(finished).toEqual(await getOperation(submitted.op.operationId));
    expect(finished).toMatchObject({ state: 'reported', version: submitted.op.version + 1 });
  });
});
