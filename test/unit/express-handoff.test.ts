import { describe, expect, it } from 'vitest';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import type { Principal } from '../../functions/core/model';
import { makeLifecycleHandlers } from '../../functions/handlers/steps';
import { coreDeps, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/**
 * Express runs five minutes at most. An attempt whose tool may take longer than what is left (after the
 * throttle retries, a backoff, earlier attempts) is not begun there, where it would be cut off mid-request:
 * Execute answers `handoff` and the Express machine continues the operation on Standard.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };

async function setUp(timeoutMs: number) {
  let clock = Date.parse('2026-12-03T08:00:00Z');
  const store = memoryStore(() => clock);
  const sent: string[] = [];
  const tool = toolSpec({
    name: 'slow_write',
    timeoutMs,
    execute: async (ctx) => {
      sent.push(ctx.idempotencyKey);
      return { ok: true };
    },
  });
  const deps = coreDeps(store, [tool], () => clock);
  const run = await createRun(deps, agent, { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 });
  const submitted = await submitToolCall(deps, run, agent, { callId: 'c1', turn: 1, name: 'slow_write', arguments: { amount: 1 } });
  if (submitted.kind !== 'created') throw new Error(submitted.kind);
  const handlers = makeLifecycleHandlers(() => deps);
  return { store, sent, id: submitted.op.operationId, execute: handlers.Execute, later: (ms: number) => (clock += ms), now: () => clock };
}

describe('Express and attempts that could outlast it', () => {
  it('hands a 200 s attempt to Standard when 120 s of the execution are gone, without sending it', async () => {
    const { store, sent, id, execute, now } = await setUp(200_000);
    const before = await store.getOperation(id);
    const startedAt = new Date(now() - 120_000).toISOString();
    const out = (await execute({ operationId: id, expressStartedAt: startedAt })) as Record<string, unknown>;
    expect(out).toMatchObject({ operationId: id, next: 'execute', handoff: true });
    expect(sent).toEqual([]);
    expect((await store.getOperation(id))?.version).toBe(before?.version);
  });

  it('runs it where it fits: at the start of the execution, or on Standard (no start time)', async () => {
    const fits = await setUp(200_000);
    const out = (await fits.execute({ operationId: fits.id, expressStartedAt: new Date(fits.now()).toISOString() })) as Record<
      string,
      unknown
    >;
    expect(out.handoff).toBeUndefined();
    expect(fits.sent).toHaveLength(1);
    const standard = await setUp(280_000);
    expect(((await standard.execute({ operationId: standard.id })) as Record<string, unknown>).handoff).toBeUndefined();
    expect(standard.sent).toHaveLength(1);
  });
});
