import { describe, expect, it } from 'vitest';
import { reserveModelCall } from '../../functions/commands/model-calls';
import { createRun } from '../../functions/commands/submit';
import type { Principal } from '../../functions/core/model';
import type { Deps } from '../../functions/core/ports';
import { sweepPart } from '../../functions/steps/resume';
import { coreDeps, memoryStore } from '../support/memory-store';

/** The sweeper's walk of the watch list charges a model call left unsettled past its lease, once. */
describe('model call leases swept', () => {
  it('charges an unsettled reservation in full when its lease has run out, and watches one not yet due again', async () => {
    let clock = Date.parse('2026-12-07T10:00:00Z');
    const store = memoryStore(() => clock);
    const base = coreDeps(store, [], () => clock);
    const deps: Deps = {
      ...base,
      config: async () => ({
        ...(await base.config()),
        modelPrices: { 'acme/m': { inputPerMillionCents: 1000, outputPerMillionCents: 3000 } },
        modelCallLeaseSeconds: 30,
      }),
    };
    const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
    const run = await createRun(deps, agent, {});
    const reserved = await reserveModelCall(deps, run, { requestId: 'r', model: 'acme/m', inputTokens: 1000, maxOutputTokens: 1000 });
    if (reserved.kind !== 'reserved') throw new Error(reserved.kind);
    // The watch list as the DynamoDB store walks it: here, the one entry of the reservation.
    const visits: (string | undefined)[] = [];
    store.sweepWatch = async (_pass, visit) => {
      visits.push(await visit(reserved.modelCallId));
      return { visited: 1 };
    };
    const walk = () => sweepPart(deps, { part: 0, parts: 1, more: () => true });

    await walk();
    expect(visits).toEqual([new Date(clock + 30_000).toISOString()]);
    expect((await store.getModelCall(reserved.modelCallId))?.state).toBe('reserved');

    clock += 30_000;
    await walk();
    await walk();
    expect(visits.slice(1)).toEqual([undefined, undefined]);
    expect(await store.getModelCall(reserved.modelCallId)).toMatchObject({ state: 'expired', chargedMicros: 4_000_000 });
    expect((await store.getRun(run.runId))?.usage).toMatchObject({ modelSpendMicros: 4_000_000, reservedMicros: 0, heldMicros: 4_000_000 });
    const expired = (await store.listEvents(run.runId)).filter((e) => e.type === 'model_call.expired');
    expect(expired.map((e) => e.detail)).toEqual([{ modelCallId: reserved.modelCallId, model: 'acme/m', chargedCents: 4 }]);
  });
});
