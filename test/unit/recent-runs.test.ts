import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operationIdFor } from '../../functions/core/ids';
import type { Principal, RunRecord } from '../../functions/core/model';
import type { Deps } from '../../functions/core/ports';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { cancelRun } from '../../functions/steps/cancel';
import { recentRuns } from '../../functions/steps/recent-runs';
import { createRun, submitToolCall } from '../../functions/steps/submit';
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
    expect(a.recentRuns?.get(run.runId)?.status).toBe('cancelled');
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

  it('forgets the least recently used run past its bound, and any run after its time', () => {
    let now = 0;
    const runs = recentRuns({ maxEntries: 2, ttlMs: 1000, now: () => now });
    const run = (runId: string) => ({ runId }) as RunRecord;
    runs.remember(run('r1'));
    runs.remember(run('r2'));
    runs.remember(run('r1'));
    runs.remember(run('r3'));
    expect([runs.get('r1')?.runId, runs.get('r2')?.runId, runs.get('r3')?.runId]).toEqual(['r1', undefined, 'r3']);
    now = 1001;
    expect(runs.get('r1')).toBeUndefined();
  });
});
