import { describe, expect, it } from 'vitest';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import type { Principal } from '../../functions/core/model';
import { STEPS } from '../../functions/handlers/steps';
import { coreDeps, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/**
 * Execute throttled past the ASL's retries: Step Functions goes to Reconcile with the submission's attempt still
 * unclaimed. Reconcile hands it back to Execute only after a recorded backoff (the Backoff wait), never at once.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };

describe('a throttled Execute', () => {
  it('goes back to Execute only after a recorded, growing backoff, and then sends its attempt once', async () => {
    let clock = Date.parse('2026-12-03T08:00:00Z');
    const store = memoryStore(() => clock);
    const sent: string[] = [];
    const charge = toolSpec({
      name: 'charge',
      execute: async (ctx) => {
        sent.push(ctx.idempotencyKey);
        return { id: 'ch_1' };
      },
      reconcile: async () => ({ found: false as const }),
    });
    const deps = coreDeps(store, [charge], () => clock);
    const run = await createRun(deps, agent, { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 });
    const submitted = await submitToolCall(deps, run, agent, { callId: 'call_1', turn: 1, name: 'charge', arguments: { amount: 500 } });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    const id = submitted.op.operationId;
    expect(await store.getOperation(id)).toMatchObject({ state: 'executing', attemptClaimed: false });

    const first = await STEPS.Reconcile(deps, id);
    expect(first).toEqual({ operationId: id, next: 'retry', delaySeconds: 2 });
    const waiting = (await store.getOperation(id))!;
    expect(waiting).toMatchObject({ state: 'executing', attemptClaimed: false, throttleWaits: 1 });
    expect(Date.parse(waiting.plan!.notBefore!)).toBe(clock + 2000);
    expect(Date.parse(waiting.leaseUntil!)).toBeGreaterThan(clock + 2000);
    const traced = (await store.listEvents(run.runId)).filter((e) => e.type === 'backoff.scheduled');
    expect(traced.map((e) => e.detail)).toEqual([{ delaySeconds: 2, reason: 'throttled' }]);

    // Throttled again after the wait: the next wait is longer.
    clock += 2000;
    expect(await STEPS.Reconcile(deps, id)).toEqual({ operationId: id, next: 'retry', delaySeconds: 28 });
    expect(sent).toEqual([]);

    // Execute gets through at last: it claims and sends the one attempt.
    clock += 28_000;
    const out = await STEPS.Execute(deps, id);
    expect(sent).toHaveLength(1);
    expect(out.next).toBe('done');
    expect(await store.getOperation(id)).toMatchObject({ state: 'reported', attempts: 1 });
  });
});
