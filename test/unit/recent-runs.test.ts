import { describe, expect, it } from 'vitest';
import { makeApp } from '../../functions/api/app';
import { z } from 'zod';
import { operationIdFor } from '../../functions/core/ids';
import type { Principal, RunRecord } from '../../functions/core/model';
import type { Deps } from '../../functions/core/ports';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { cancelRun } from '../../functions/commands/cancel';
import { recentRuns } from '../../functions/steps/recent-runs';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import { idleLifecycle, memoryStore } from '../support/memory-store';

/**
 * A call into a run this process remembers is admitted without reading the run first. Another process may
 * have moved the run meanwhile (cancelled it, opened a turn, spent its budget): each case must end exactly as
 * it would after a fresh read, at the cost of one read then.
 */

const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const lookup: ToolSpec = {
  name: 'lookup',
  description: 'a read',
  inputSchema: z.strictObject({ q: z.string() }),
  outputSchema: z.unknown(),
  risk: 'read',
  timeoutMs: 1000,
  maxAttempts: 1,
  supportsIdempotency: false,
  approval: 'never',
  execute: async () => ({ ok: true }),
};

function world() {
  const clock = Date.parse('2026-12-02T12:00:00Z');
  const store = memoryStore(() => clock);
  let reads = 0;
  const counted = {
    ...store,
    getRun: (runId: string) => {
      reads++;
      return store.getRun(runId);
    },
  };
  /** One process: its own remembered runs over the shared store. */
  const process = (): Deps => ({
    store: counted,
    tools: makeRegistry([lookup]),
    config: async () => ({ principals: [], approvalSecret: 's'.repeat(32), approvalTtlSeconds: 600 }),
    lifecycle: idleLifecycle,
    notifier: { approvalRequested: async () => undefined },
    now: () => clock,
    random: () => 0.5,
    publicBaseUrl: 'http://runner',
    recentRuns: recentRuns({ now: () => clock }),
  });
  /** As the tool-calls route does: the remembered run if there is one, else a read. */
  const call = async (deps: Deps, runId: string, callId: string, turn: number) => {
    const run = deps.recentRuns?.get(runId) ?? (await counted.getRun(runId))!;
    return submitToolCall(deps, run, agent, { callId, turn, name: 'lookup', arguments: { q: callId } });
  };
  return { store, process, call, reads: () => reads };
}

const AGENT_KEY = 'k'.repeat(32);
const budgets = { maxToolCalls: 3, maxTurns: 2, maxSpendCents: 0, maxWallClockSeconds: 3600 };

describe('runs remembered for admission', () => {
  it('a second call into the same run reads nothing, and the remembered usage follows the calls admitted', async () => {
    const w = world();
    const a = w.process();
    const run = await createRun(a, agent, budgets);
    expect((await w.call(a, run.runId, 'c1', 1)).kind).toBe('created');
    expect(w.reads()).toBe(1);
    expect((await w.call(a, run.runId, 'c2', 1)).kind).toBe('created');
    expect(w.reads()).toBe(1);
    const remembered = a.recentRuns?.get(run.runId) as RunRecord;
    const stored = (await w.store.getRun(run.runId))!;
    expect(remembered.usage).toEqual(stored.usage);
    expect(remembered.usage).toEqual({ turns: 1, toolCalls: 2, spendCents: 0 });
  });

  it('a run cancelled by another process answers run_closed, and creates nothing', async () => {
    const w = world();
    const [a, b] = [w.process(), w.process()];
    const run = await createRun(a, agent, budgets);
    await w.call(a, run.runId, 'c1', 1);
    await cancelRun(b, (await w.store.getRun(run.runId))!);
    expect((await w.call(a, run.runId, 'c2', 1)).kind).toBe('run_closed');
    expect(await w.store.getOperation(operationIdFor(run.runId, 'c2'))).toBeUndefined();
    expect(a.recentRuns?.get(run.runId)).toBeUndefined();
  });

  it('a turn opened by another process: the call joins it instead of opening another', async () => {
    const w = world();
    const [a, b] = [w.process(), w.process()];
    const run = await createRun(a, agent, budgets);
    await w.call(a, run.runId, 'c1', 1);
    await w.call(b, run.runId, 'c2', 2);
    const readsBefore = w.reads();
    expect((await w.call(a, run.runId, 'c3', 2)).kind).toBe('created');
    expect(w.reads()).toBe(readsBefore + 1);
    expect((await w.store.getRun(run.runId))!.usage).toEqual({ turns: 2, toolCalls: 3, spendCents: 0 });
  });

  it('a budget spent by another process exhausts the run as a fresh read would', async () => {
    const w = world();
    const [a, b] = [w.process(), w.process()];
    const run = await createRun(a, agent, budgets);
    await w.call(a, run.runId, 'c1', 1);
    await w.call(b, run.runId, 'c2', 1);
    await w.call(b, run.runId, 'c3', 1);
    const answer = await w.call(a, run.runId, 'c4', 1);
    expect(answer.kind).toBe('created');
    if (answer.kind !== 'created') return;
    expect(answer.op.state).toBe('reported');
    expect(answer.op.envelope).toMatchObject({ status: 'budget_exhausted' });
    const stored = (await w.store.getRun(run.runId))!;
    expect(stored.status).toBe('budget_exhausted');
    expect(stored.usage.toolCalls).toBe(3);
  });

  it('a run remembered until it closed is read again: cancelled after its budget ran out, it answers run_closed', async () => {
    const w = world();
    const [a, b] = [w.process(), w.process()];
    const run = await createRun(a, agent, { ...budgets, maxToolCalls: 1 });
    await w.call(a, run.runId, 'c1', 1);
    const exhausted = await w.call(a, run.runId, 'c2', 1);
    expect(exhausted.kind === 'created' && exhausted.op.envelope?.status).toBe('budget_exhausted');
    expect(a.recentRuns?.get(run.runId)).toBeUndefined();
    await cancelRun(b, (await w.store.getRun(run.runId))!);
    expect((await w.call(a, run.runId, 'c3', 1)).kind).toBe('run_closed');
    expect(await w.store.getOperation(operationIdFor(run.runId, 'c3'))).toBeUndefined();
  });

  it("keeps what admission reads, not the run's metadata", async () => {
    const w = world();
    const a = w.process();
    const run = await createRun(a, agent, budgets, { note: 'x'.repeat(10_000) });
    await w.call(a, run.runId, 'c1', 1);
    const remembered = a.recentRuns?.get(run.runId);
    expect(remembered?.metadata).toBeUndefined();
    expect(remembered).toMatchObject({ runId: run.runId, principalId: 'agent', status: 'open', budgets: run.budgets });
  });

  it('the tool-calls route admits the second call into a run without reading the run', async () => {
    const w = world();
    const deps: Deps = {
      ...w.process(),
      config: async () => ({
        principals: [{ id: 'agent', key: AGENT_KEY, roles: ['agent'], tools: '*' }],
        approvalSecret: 's'.repeat(32),
        approvalTtlSeconds: 600,
      }),
    };
    const app = makeApp(deps);
    const run = await createRun(deps, agent, budgets);
    const post = (callId: string) =>
      app.request(`/v1/runs/${run.runId}/tool-calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${AGENT_KEY}`, 'content-type': 'application/json', prefer: 'wait=0' },
        body: JSON.stringify({ callId, turn: 1, name: 'lookup', arguments: { q: callId } }),
      });
    expect((await post('c1')).status).toBe(202);
    const reads = w.reads();
    expect((await post('c2')).status).toBe(202);
    expect(w.reads()).toBe(reads);
    expect((await w.store.getRun(run.runId))!.usage.toolCalls).toBe(2);
  });

  it('forgets the least recently used run past its bound, and any run after its time', () => {
    let now = 0;
    const runs = recentRuns({ maxEntries: 2, ttlMs: 1000, now: () => now });
    const run = (runId: string) => ({ runId, status: 'open' }) as RunRecord;
    runs.remember(run('r1'));
    runs.remember(run('r2'));
    runs.remember(run('r1'));
    runs.remember(run('r3'));
    expect([runs.get('r1')?.runId, runs.get('r2')?.runId, runs.get('r3')?.runId]).toEqual(['r1', undefined, 'r3']);
    now = 1001;
    expect(runs.get('r1')).toBeUndefined();
  });
});
