import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

// Template mode only: AWS delivers every Express task and every asynchronous invocation at least once; here
// each is delivered a second time, 0–2 s later (TOOLRUNNER_AWS_FAULTS=duplicate-delivery, seeded).
describe.runIf(handlerMode === 'template')('duplicate deliveries of every Express task and scheduled sweep', () => {
  let stack: TestStack;
  beforeAll(async () => {
    const before = { faults: process.env.TOOLRUNNER_AWS_FAULTS, seed: process.env.TOOLRUNNER_AWS_FAULTS_SEED };
    process.env.TOOLRUNNER_AWS_FAULTS = 'duplicate-delivery';
    process.env.TOOLRUNNER_AWS_FAULTS_SEED = '20261203';
    try {
      stack = await startTestStack();
    } finally {
      for (const [key, value] of [
        ['TOOLRUNNER_AWS_FAULTS', before.faults],
        ['TOOLRUNNER_AWS_FAULTS_SEED', before.seed],
      ] as const)
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
  }, 240_000);
  afterAll(async () => stack?.stop());

  it('charges exactly once per call, settles every call without a person, with writes that retry and wait for locks', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    // Charges that take 0.8 s (a second delivery often finds the attempt in flight), and a read that fails
    // once (a retry with backoff, which a second delivery must not cut short). All on the Express machine.
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 800, count: 6 });
    await sandbox.fault({ route: 'GET /v1/orders/{id}', mode: 'fail_503', count: 1 });
    // Emails have no idempotency: an attempt presumed lost would go to a person. Each takes 0.8 s.
    await sandbox.fault({ route: 'POST /v1/emails', mode: 'commit_then_timeout', delayMs: 800, count: 4 });
    const emails = Array.from({ length: 4 }, (_, i) => ({
      callId: `call_mail_${i}`,
      name: 'send_email',
      arguments: { to: `person${i}@example.com`, subject: 'duplicate deliveries', body: 'once' },
    }));
    const calls = Array.from({ length: 6 }, (_, i) => ({
      callId: `call_dup_${i}`,
      name: 'charge_card',
      arguments: { amount: 100 + i, currency: 'USD', customer: `cus_dup_${i}`, description: 'duplicate deliveries' },
    }));
    const shipping = Array.from({ length: 3 }, (_, i) => ({
      callId: `call_ship_${i}`,
      name: 'update_shipping_address',
      arguments: { orderId: 'ord_2', address: { line1: `${i} Main Street`, city: 'Springfield', postalCode: '10001', country: 'US' } },
    }));
    const read = { callId: 'call_read', name: 'get_order', arguments: { orderId: 'ord_1' } };
    const submitted = await Promise.all([...calls, ...shipping, ...emails, read].map((call) => api.call(keys.agent, runId, call, 0)));
    const ids = submitted.map((r) => (r.body.operationId ?? r.body.logical_operation_id) as string);
    // A call a person must settle would never be reported: name it, with its trace, rather than time out.
    for (const id of ids) {
      const op = await api.until(
        `operation ${id} settled`,
        () => api.operation(keys.agent, id),
        (o) => o.state === 'reported' || Boolean(o.review?.required),
        120_000,
      );
      if (op.review?.required) {
        const mine = (await api.trace(keys.agent, runId)).filter((e) => e.operationId === id);
        throw new Error(`${op.callId} went to a person: ${JSON.stringify(mine.map((e) => [e.type, e.to ?? '', e.detail ?? {}]))}`);
      }
    }
    for (const id of ids)
      await api.until(
        `operation ${id} reported`,
        () => api.operation(keys.agent, id),
        (o) => o.state === 'reported',
        120_000,
      );
    const ops = await Promise.all(ids.map((id) => api.operation(keys.agent, id)));
    expect(ops.map((o) => o.envelope?.status ?? o.outcome?.kind)).toEqual(ops.map(() => 'succeeded'));
    const ledger = await sandbox.ledger();
    for (const call of calls)
      expect(
        ledger.filter((e) => e.kind === 'charge' && e.body.customer === call.arguments.customer),
        call.callId,
      ).toHaveLength(1);
    expect(ledger.filter((e) => e.kind === 'email')).toHaveLength(4);
    // The shipping address is replay-safe (a PUT of the same body): a second delivery may send it again.
    expect(ledger.filter((e) => e.kind === 'shipping_address').length).toBeGreaterThanOrEqual(3);
    // No attempt was presumed lost while another delivery was sending it: no outcome ever unknown.
    const trace = await api.trace(keys.agent, runId);
    const unknown = trace.filter((e) => e.type === 'state.transition' && e.to === 'outcome_unknown');
    const lifecycle = (id: string) =>
      trace
        .filter((e) => e.operationId === id)
        .map((e) => `${e.at} ${e.type} ${e.from ?? ''}>${e.to ?? ''} ${JSON.stringify(e.detail ?? {})}`);
    expect(unknown, unknown.map((e) => lifecycle(e.operationId!).join('\n')).join('\n\n')).toEqual([]);
    // The read's retry came after its backoff, not when a second delivery arrived.
    const readOp = ids[ids.length - 1];
    const backoff = trace.find((e) => e.operationId === readOp && e.type === 'backoff.scheduled')!;
    const retried = trace.filter((e) => e.operationId === readOp && e.type === 'attempt.started')[1];
    expect(Date.parse(retried.at) - Date.parse(backoff.at)).toBeGreaterThanOrEqual((backoff.detail!.delaySeconds as number) * 1000 - 50);
    // Nobody was asked to settle anything.
    const reviews = await api.request('GET', '/v1/reviews?status=open', { key: keys.reviewer });
    expect((reviews.body.reviews as { operationId: string }[]).filter((r) => ids.includes(r.operationId))).toEqual([]);
    expect(stack.awsFaults!.counts.duplicatesDelivered).toBeGreaterThan(ids.length);
  }, 240_000);
});
