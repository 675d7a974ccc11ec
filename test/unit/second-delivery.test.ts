import { describe, expect, it } from 'vitest';
import { TransportError, UpstreamHttpError } from '../../functions/core/errors';
import type { Principal } from '../../functions/core/model';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import { STEPS } from '../../functions/handlers/steps';
import { executeAttempt } from '../../functions/steps/execute';
import { coreDeps, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/**
 * AWS may deliver a task twice: two Executes for one attempt of a replay-safe charge, the second arriving
 * while the first's request is in flight. Found by the template-mode chaos run: both sent the attempt (same
 * key); the first's request committed and then timed out, the second's was refused with a 429, which was
 * recorded as the attempt's outcome, and the charge was never told to the model. One worker sends an attempt.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };

function harness() {
  let clock = Date.parse('2026-12-03T08:00:00Z');
  const store = memoryStore(() => clock);
  const sent: string[] = [];
  let release!: () => void;
  const inFlight = new Promise<void>((r) => (release = r));
  // The first request commits and its answer never comes; any other is refused (rate limited).
  const charge = toolSpec({
    name: 'charge',
    execute: async (ctx) => {
      sent.push(ctx.idempotencyKey);
      if (sent.length > 1) throw new UpstreamHttpError(429, undefined, 1, 'slow down');
      await inFlight;
      throw new TransportError('timeout', true, 'no answer within the timeout');
    },
    reconcile: async () => ({ found: true as const, result: { id: 'ch_1' } }),
  });
  const deps = coreDeps(store, [charge], () => clock);
  /** Submits one charge without waiting: its first attempt's intent recorded, for a worker to send. */
  const submit = async () => {
    const run = await createRun(deps, agent, { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 });
    const submitted = await submitToolCall(deps, run, agent, { callId: 'call_1', turn: 1, name: 'charge', arguments: { amount: 500 } });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    return submitted.op.operationId;
  };
  return { deps, store, sent, release, submit, advance: (ms: number) => (clock += ms) };
}

describe('two deliveries of one Execute task', () => {
  it("the second waits for the first's attempt instead of sending it too; the unknown outcome is reconciled", async () => {
    const { deps, store, sent, release, submit } = harness();
    const id = await submit();
    // The submission recorded the first attempt's intent; no worker holds it yet.
    expect(await store.getOperation(id)).toMatchObject({ state: 'executing', attempts: 1, attemptClaimed: false });

    const first = STEPS.Execute(deps, id);
    await new Promise((r) => setTimeout(r, 10));
    expect(sent).toHaveLength(1);
    const second = await STEPS.Execute(deps, id);
    // Same attempt, same execution, within its lease: it waits (a short pause, then a look), it does not send.
    expect(second).toMatchObject({ next: 'retry', delaySeconds: 10 });
    expect(sent).toHaveLength(1);

    release();
    const out = await first;
    const op = (await store.getOperation(id))!;
    expect(op.state).toBe('outcome_unknown');
    expect(out.next).toBe('reconcile');
    expect(sent).toHaveLength(1);
  });

  it('a worker that finds the sender gone (its lease over) presumes the attempt lost: its outcome is unknown, then looked up', async () => {
    const { deps, store, sent, advance, submit } = harness();
    const id = await submit();
    void STEPS.Execute(deps, id);
    await new Promise((r) => setTimeout(r, 10));
    const claimed = (await store.getOperation(id))!;
    advance(Date.parse(claimed.leaseUntil!) - Date.parse(claimed.updatedAt) + 1_000);
    const out = await STEPS.Execute(deps, id);
    // Not sent again blindly: the vanished worker's request may still land, so a later failure cannot settle it.
    expect(sent).toHaveLength(1);
    expect(out.next).toBe('reconcile');
    expect(await store.getOperation(id)).toMatchObject({ state: 'outcome_unknown', attempts: 1, inDoubtSince: 1 });
  });

  it('the submitting API sends the first attempt it recorded itself, without a claim write', async () => {
    const { deps, store, sent, submit } = harness();
    const id = await submit();
    const op = (await store.getOperation(id))!;
    void executeAttempt(deps, id, op, true);
    await new Promise((r) => setTimeout(r, 10));
    expect(sent).toHaveLength(1);
    expect(await store.getOperation(id)).toMatchObject({ version: op.version });
  });
});
