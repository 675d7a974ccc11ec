import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sweep } from '../../functions/steps/resume';
import { submitToolCall } from '../../functions/commands/submit';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';
import { unknownOutcomeEmail } from '../support/scenarios';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 42 });
});
afterAll(async () => stack?.stop());
beforeEach(async () => stack.sandbox.reset());

/** The envelope is answered once recorded and Report marks it delivered just after: read the whole story once it has. */
async function traceWhenReported(runId: string, operationId: string) {
  await stack.api.until(
    'reported',
    () => stack.api.operation(stack.keys.agent, operationId),
    (o) => o.state === 'reported',
  );
  return stack.api.trace(stack.keys.agent, runId);
}

const charge = (amount = 1200) => ({ amount, currency: 'USD', customer: 'cus_42', description: 'test order' });

describe('trace tests: writes that never repeat', () => {
  it('503 twice then success: three attempts, one operationId, one budget', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'fail_503', count: 2 });
    const res = await api.call(keys.agent, runId, { callId: 'call_503', name: 'charge_card', arguments: charge() });

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'succeeded',
      call_id: 'call_503',
      result: { amount: 1200, currency: 'USD', customer: 'cus_42', status: 'succeeded' },
    });
    const opId = res.body.logical_operation_id;
    const events = await traceWhenReported(runId, res.body.logical_operation_id);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'backoff.scheduled',
      'attempt.started',
      'attempt.finished',
      'backoff.scheduled',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(new Set(events.map((e) => e.operationId))).toEqual(new Set([opId]));
    const finished = events.filter((e) => e.type === 'attempt.finished');
    expect(finished.map((e) => [e.attempt, e.detail!.outcome, e.detail!.upstreamStatus])).toEqual([
      [1, 'failed_retryable', 503],
      [2, 'failed_retryable', 503],
      [3, 'succeeded', 200],
    ]);
    const backoffs = events.filter((e) => e.type === 'backoff.scheduled');
    expect(backoffs.map((e) => e.attempt)).toEqual([2, 3]);
    expect(backoffs[0].detail!.delaySeconds).toBeLessThanOrEqual(1);
    expect(backoffs[1].detail!.delaySeconds).toBeLessThanOrEqual(2);

    const op = await api.operation(keys.reviewer, opId);
    const ledger = await sandbox.ledger();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ kind: 'charge', idempotencyKey: op.idempotencyKey, body: charge() });
    expect(op.attempts).toBe(3);
    const run = await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent });
    expect(run.body.usage).toMatchObject({ toolCalls: 1, spendCents: 1200 });
  });

  it('commit then timeout: outcome_unknown, reconciliation by key, no new operation', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 20_000 });
    const res = await api.call(keys.agent, runId, { callId: 'call_ctt', name: 'charge_card', arguments: charge(2500) });

    expect(res.body).toMatchObject({ status: 'succeeded', result: { amount: 2500 } });
    const events = await traceWhenReported(runId, res.body.logical_operation_id);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'outcome_unknown>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(events.find((e) => e.type === 'attempt.finished')!.detail).toMatchObject({
      outcome: 'outcome_unknown',
      code: 'timeout_unknown',
    });
    expect(events.find((e) => e.type === 'reconcile.finished')!.detail).toMatchObject({ plan: 'lookup', result: 'found' });
    expect(new Set(events.map((e) => e.operationId)).size).toBe(1);
    const op = await api.operation(keys.reviewer, res.body.logical_operation_id);
    const ledger = await sandbox.ledger();
    expect(ledger).toHaveLength(1);
    expect(ledger[0].idempotencyKey).toBe(op.idempotencyKey);
    expect(res.body.result.id).toBe(ledger[0].id);
    expect(op.attempts).toBe(1);
  });

  it('a failed status lookup is retried after a backoff, then settles the unknown outcome', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 20_000 });
    await sandbox.fault({ route: 'GET /v1/charges', mode: 'fail_503' });
    const res = await api.call(keys.agent, runId, { callId: 'call_lookup', name: 'charge_card', arguments: charge(640) });
    expect(res.body).toMatchObject({ status: 'succeeded', result: { amount: 640 } });
    const events = await traceWhenReported(runId, res.body.logical_operation_id);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'reconcile.started',
      'reconcile.finished',
      'outcome_unknown>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(events.filter((e) => e.type === 'reconcile.finished').map((e) => e.detail!.result)).toEqual(['lookup_failed', 'found']);
    expect(await sandbox.ledger()).toHaveLength(1);
  });

  it('a reset connection after sending: lookup finds nothing, the retry reuses the same key', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'reset_connection' });
    const res = await api.call(keys.agent, runId, { callId: 'call_reset', name: 'charge_card', arguments: charge(300) });
    expect(res.body.status).toBe('succeeded');
    const events = await traceWhenReported(runId, res.body.logical_operation_id);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'backoff.scheduled',
      'outcome_unknown>executing',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(events.find((e) => e.type === 'reconcile.finished')!.detail).toMatchObject({ result: 'not_found', action: 'retry_same_key' });
    const op = await api.operation(keys.reviewer, res.body.logical_operation_id);
    expect((await sandbox.ledger()).map((e) => e.idempotencyKey)).toEqual([op.idempotencyKey]);
  });
});

describe('error matrix', () => {
  it('429 honours Retry-After as the backoff floor', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'GET /v1/orders/{id}', mode: 'rate_limit_429', retryAfterSeconds: 2 });
    const res = await api.call(keys.agent, runId, { callId: 'call_429', name: 'get_order', arguments: { orderId: 'ord_9' } });
    expect(res.body.status).toBe('succeeded');
    const events = await api.trace(keys.agent, runId);
    const backoff = events.find((e) => e.type === 'backoff.scheduled')!;
    expect(backoff.detail).toMatchObject({ reason: 'rate_limited', retryAfterSeconds: 2 });
    expect(backoff.detail!.delaySeconds).toBeGreaterThanOrEqual(2);
    const started = events.filter((e) => e.type === 'attempt.started').map((e) => Date.parse(e.at));
    expect(started[1] - started[0]).toBeGreaterThanOrEqual(2000);
  });

  it('transient failures stop at maxAttempts with a typed failure', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'GET /v1/orders/{id}', mode: 'fail_503', count: 5 });
    const res = await api.call(keys.agent, runId, { callId: 'call_exhaust', name: 'get_order', arguments: { orderId: 'ord_9' } });
    // On a loaded machine the retries can outlast the wait (the stack from the template caps it): then the
    // call answers pending, and its envelope is read from the operation once it has one.
    if (res.status === 202)
      res.body = (
        await api.until(
          'the envelope',
          () => api.operation(keys.agent, res.body.operationId),
          (op) => Boolean(op.envelope),
        )
      ).envelope;
    expect(res.body).toMatchObject({
      status: 'failed',
      code: 'upstream_unavailable',
      allowed_next_actions: ['retry_later_with_new_call_id'],
    });
    expect(res.body.message).toContain('after 3 attempt(s)');
    const events = await traceWhenReported(runId, res.body.logical_operation_id);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(3);
    expect(shape(events).slice(-4)).toEqual([
      'executing>failed_permanent',
      'result.recorded',
      'failed_permanent>reported',
      'result.reported',
    ]);
  });

  it('a permanent failure stops at once', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'permanent_402' });
    const res = await api.call(keys.agent, runId, { callId: 'call_402', name: 'charge_card', arguments: charge() });
    expect(res.body).toMatchObject({ status: 'failed', code: 'permanent_failure' });
    expect(res.body.message).toContain('402');
    const events = await api.trace(keys.agent, runId);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(1);
    expect(await sandbox.ledger()).toEqual([]);
  });

  it('a forbidden tool ends rejected with no attempt', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.other);
    const res = await api.call(keys.other, runId, { callId: 'call_forbidden', name: 'charge_card', arguments: charge() });
    expect(res.body).toMatchObject({ status: 'rejected', code: 'forbidden' });
    const events = await api.trace(keys.other, runId);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>rejected',
      'result.recorded',
      'rejected>reported',
      'result.reported',
    ]);
    expect(events[1].detail).toMatchObject({ decision: 'deny', code: 'forbidden' });
    expect(await sandbox.ledger()).toEqual([]);
  });

  it('an email whose outcome is unknown is never retried and goes to a person, who settles it', async () => {
    const { api, keys, sandbox } = stack;
    const { runId, res } = await unknownOutcomeEmail(stack);
    expect(res.body).toMatchObject({
      status: 'outcome_unknown',
      code: 'timeout_unknown',
      allowed_next_actions: ['check_status', 'request_human_review'],
    });
    const opId = res.body.logical_operation_id;
    let events = await api.trace(keys.agent, runId);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'result.reported',
    ]);
    expect(events.find((e) => e.type === 'reconcile.finished')!.detail).toMatchObject({ plan: 'review', result: 'needs_review' });
    expect(await api.operation(keys.agent, opId)).toMatchObject({ state: 'outcome_unknown', review: { required: true } });

    // Only a reviewer may settle it, and only once.
    const body = { outcome: 'succeeded', note: 'the mail server shows it was delivered' };
    expect((await api.request('POST', `/v1/operations/${opId}/resolve`, { key: keys.agent, body })).status).toBe(403);
    const resolved = await api.request('POST', `/v1/operations/${opId}/resolve`, { key: keys.reviewer, body });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({
      state: 'reported',
      envelope: { status: 'succeeded', message: 'a reviewer confirmed the call succeeded' },
    });
    expect((await api.request('POST', `/v1/operations/${opId}/resolve`, { key: keys.reviewer, body })).status).toBe(409);
    events = await api.trace(keys.agent, runId);
    expect(shape(events).slice(-5)).toEqual([
      'reconcile.finished',
      'outcome_unknown>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    // The reviewer's note is in the trace, for the operator.
    expect(events.at(-5)!.detail).toEqual({
      result: 'resolved_by_reviewer',
      verdict: 'succeeded',
      reviewerId: 'reviewer',
      note: 'the mail server shows it was delivered',
    });
    expect(await sandbox.ledger()).toHaveLength(1);
  });

  it('the sandbox refuses a reused idempotency key with another body', async () => {
    const post = (body: unknown) =>
      fetch(`${stack.sandboxUrl}/v1/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
        body: JSON.stringify(body),
      });
    const first = await post(charge(100));
    const replay = await post(charge(100));
    const other = await post(charge(101));
    expect(first.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(await first.json());
    expect(other.status).toBe(409);
    expect((await other.json()).error.code).toBe('idempotency_key_reused');
    expect(await stack.sandbox.ledger()).toHaveLength(1);
  });
});

describe('crash recovery by lease', () => {
  it.runIf(isEmbedded)('the sweeper resumes an operation whose execution was lost, from its record', async () => {
    const { api, keys, sandbox } = stack;
    const deps = stack.deps!;
    const runId = await api.createRun(keys.agent);
    // The submission is durable but its execution never starts, as if the process died right after the write.
    const lost = { ...deps, lifecycle: { ...deps.lifecycle, start: async () => undefined } };
    const submitted = await submitToolCall(
      lost,
      (await deps.store.getRun(runId))!,
      { id: 'agent', roles: ['agent'], tools: '*' },
      { callId: 'call_lost', turn: 1, name: 'charge_card', arguments: charge(450) },
    );
    expect(submitted.kind).toBe('created');
    const opId = (submitted as { op: { operationId: string } }).op.operationId;
    // Its intent is durable (charge_card dedupes by key, so the first attempt is written with the submission).
    expect((await api.operation(keys.agent, opId)).state).toBe('executing');
    // Two sweepers at once, five minutes later (its lease has long passed): one claim in all. Their clock is
    // ahead of the stack's, so the resumed execution starts only after both have swept: were it already running,
    // the leases it writes (by the stack's clock) would look long passed to a sweeper that lists it late, and
    // that sweeper would rightly resume it again.
    const resumed: Parameters<typeof deps.lifecycle.start>[] = [];
    const later = {
      ...deps,
      now: () => Date.now() + 5 * 60_000,
      lifecycle: { ...deps.lifecycle, start: async (...args: Parameters<typeof deps.lifecycle.start>) => void resumed.push(args) },
    };
    const [first, second] = await Promise.all([sweep(later), sweep(later)]);
    expect([...first, ...second].filter((id) => id === opId).length).toBe(1);
    expect(resumed.filter(([input]) => input.operationId === opId)).toHaveLength(1);
    for (const args of resumed) await deps.lifecycle.start(...args);
    const op = await api.until(
      'reported',
      () => api.operation(keys.reviewer, opId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'succeeded', result: { amount: 450 } });
    expect((await deps.store.getOperation(opId))!.resumes).toBe(1);
    // The attempt may have gone out: recovery looks it up by key before sending it again, with the same key.
    expect(shape(await api.trace(keys.agent, runId))).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'backoff.scheduled',
      'outcome_unknown>executing',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect((await sandbox.ledger()).map((e) => e.idempotencyKey)).toEqual([op.idempotencyKey]);
  });
});

describe('duplicates and conflicting writes', () => {
  it('concurrent submissions of one (runId, callId) start one execution and all get the stored outcome', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => api.call(keys.agent, runId, { callId: 'call_same', name: 'charge_card', arguments: charge(777) })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    // Equal envelopes, compared as values: one read before Report (computed) and one after (as DynamoDB returns it) may order keys differently.
    for (const reply of replies) expect(reply.body).toEqual(replies[0].body);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    expect(await sandbox.ledger()).toHaveLength(1);
    const events = await api.trace(keys.agent, runId);
    expect(events.filter((e) => e.type === 'operation.proposed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'operation.replayed')).toHaveLength(7);
  });

  it('writes sharing a lock key are serialized', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    // Each write commits and then answers after 1.5 s: without the lock they would overlap.
    await sandbox.fault({ route: 'PUT /v1/orders/{id}/shipping-address', mode: 'commit_then_timeout', delayMs: 1500, count: 2 });
    const address = (line1: string) => ({ orderId: 'ord_5', address: { line1, city: 'Paris', postalCode: '75001', country: 'FR' } });
    const [a, b] = await Promise.all([
      api.call(keys.agent, runId, { callId: 'call_addr_a', name: 'update_shipping_address', arguments: address('1 Rue A') }),
      api.call(keys.agent, runId, { callId: 'call_addr_b', name: 'update_shipping_address', arguments: address('2 Rue B') }),
    ]);
    expect([a.body.status, b.body.status]).toEqual(['succeeded', 'succeeded']);
    const events = await api.trace(keys.agent, runId);
    const windows = [a, b].map((r) => {
      const mine = events.filter((e) => e.operationId === r.body.logical_operation_id);
      return [
        Date.parse(mine.find((e) => e.type === 'attempt.started')!.at),
        Date.parse(mine.find((e) => e.type === 'attempt.finished')!.at),
      ];
    });
    windows.sort((x, y) => x[0] - y[0]);
    expect(windows[1][0]).toBeGreaterThanOrEqual(windows[0][1]);
    expect(events.some((e) => e.type === 'backoff.scheduled' && e.detail!.reason === 'lock_busy')).toBe(true);
    expect((await sandbox.ledger()).filter((e) => e.kind === 'shipping_address')).toHaveLength(2);
  });
});
