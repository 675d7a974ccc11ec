import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

// Template mode only: the deployed bundles on both state machines, with Lambda's platform lines in each
// function's log, which is where an invocation is counted, as one would on AWS.
describe.runIf(handlerMode === 'template')('a call blocked on a held lock', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  }, 240_000);
  afterAll(async () => stack?.stop());

  /** Lambda's `platform.start` records in the Execute function's log: its invocations. */
  const executeInvocations = () => {
    const logs = join(stack.dataDir, 'logs');
    const file = readdirSync(logs).find((f) => /ExecuteFunction/.test(f))!;
    return readFileSync(join(logs, file), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"type":"platform.start"'));
  };

  it('waits with backoff (at most 3 looks a minute), moves from Express to Standard, and ends at its deadline: lock_wait_deadline', async () => {
    const { api, keys } = stack;
    const orderId = 'ord_locked';
    // Another operation holds the order's lock for ten minutes (a holder whose lease outlives this call's deadline).
    expect(await stack.deps!.store.acquireLock(`update_shipping_address:${orderId}`, 'op_holder', 600_000, Date.now())).toBe(true);
    const before = executeInvocations().length;
    const started = Date.now();
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(
      keys.agent,
      runId,
      {
        callId: 'call_locked',
        name: 'update_shipping_address',
        arguments: { orderId, address: { line1: '1 Main Street', city: 'Springfield', postalCode: '10001', country: 'US' } },
      },
      0,
    );
    expect(reply.status).toBe(202);
    const operationId = reply.body.operationId as string;

    // 60 s into the wait: the first look, a quick one 2 s later, one at 30 s; the fourth comes at 60 s.
    await api.until(
      'a minute of waiting',
      async () => Date.now() - started,
      (ms) => ms >= 58_000,
      70_000,
    );
    expect(executeInvocations().length - before).toBeLessThanOrEqual(3);

    // The deadline (3 attempts of 3 s, plus 120 s) comes before the lock frees: the call ends, it never ran.
    const op = await api.until(
      'the lock wait deadline',
      () => api.operation(keys.agent, operationId),
      (o) => o.state === 'reported' || o.state === 'failed_permanent',
      150_000,
    );
    expect(op).toMatchObject({ attempts: 0 });
    const trace = await api.trace(keys.agent, runId);
    const waits = trace
      .filter((e) => e.type === 'backoff.scheduled' && e.detail?.reason === 'lock_busy')
      .map((e) => e.detail!.delaySeconds);
    // 2, 28 and 30 s, then 61 s while a look after it could still make an attempt before the deadline: on time,
    // one of those (the fourth look 60 s in, the fifth 121 s in); a look that comes late (a loaded machine, cold
    // starts) ends the call one wait sooner.
    expect(waits.slice(0, 3)).toEqual([2, 28, 30]);
    expect(waits.slice(3)).toEqual(waits.length > 3 ? [61] : []);
    expect(trace.find((e) => e.type === 'result.recorded')?.detail).toMatchObject({
      outcome: 'failed_permanent',
      reason: 'lock_wait_deadline',
    });
    // One look per wait and the last, which ended it: five over about two minutes of waiting on time, where an
    // immediate re-entry made 2,438 in the first minute.
    const looks = executeInvocations().length - before;
    expect(looks).toBe(waits.length + 1);
    const minutes = (Date.now() - started) / 60_000;
    expect(looks / Math.ceil(minutes)).toBeLessThanOrEqual(10);
    // No attempt reached the upstream.
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'shipping_address')).toEqual([]);
  }, 300_000);
});
