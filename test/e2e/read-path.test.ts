import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shape, startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.stop());

describe('a get_order call through the whole real path', () => {
  it('returns the succeeded envelope and records the ordered trace', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const res = await api.call(keys.agent, runId, { callId: 'call_read_1', name: 'get_order', arguments: { orderId: 'ord_7' } });

    expect(res.status).toBe(200);
    const opId = res.body.logical_operation_id as string;
    expect(opId).toMatch(/^op_/);
    expect(res.body).toEqual({
      status: 'succeeded',
      call_id: 'call_read_1',
      logical_operation_id: opId,
      message: 'the tool call succeeded',
      result: {
        id: 'ord_7',
        status: 'shipped',
        customer: 'cus_7',
        totalCents: 2750,
        shippingAddress: { line1: '7 Main Street', city: 'Springfield', postalCode: '10007', country: 'US' },
      },
      allowed_next_actions: ['continue'],
    });

    const events = await api.trace(keys.agent, runId);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    // Strictly increasing, not contiguous (functions/adapters/trace-clock.ts); one write's block is consecutive.
    for (let i = 1; i < events.length; i++) expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
    expect(events[1].seq).toBe(events[0].seq + 1);
    for (const e of events) {
      expect(e).toMatchObject({ runId, operationId: opId, callId: 'call_read_1' });
      expect(Date.parse(e.at)).not.toBeNaN();
    }
    const finished = events.find((e) => e.type === 'attempt.finished')!;
    expect(finished.attempt).toBe(1);
    expect(finished.detail).toMatchObject({ outcome: 'succeeded', upstreamStatus: 200 });
    expect(typeof finished.detail!.latencyMs).toBe('number');
    // Arguments and results appear only as hashes; the idempotency key never.
    const text = JSON.stringify(events);
    expect(text).not.toContain('ord_7');
    expect(text).not.toContain('Main Street');
    const op = await api.operation(keys.reviewer, opId);
    expect(text).not.toContain(op.idempotencyKey);
    // The idempotency key is for those who look an effect up upstream: reviewers and admins, never the agent.
    const asAgent = await api.operation(keys.agent, opId);
    expect(asAgent).not.toHaveProperty('idempotencyKey');
    expect(JSON.stringify(asAgent)).not.toContain(op.idempotencyKey);
    expect((await api.operation(keys.admin, opId)).idempotencyKey).toBe(op.idempotencyKey);
    expect(op).toMatchObject({
      operationId: opId,
      runId,
      callId: 'call_read_1',
      turn: 1,
      toolName: 'get_order',
      state: 'reported',
      risk: 'read',
      attempts: 1,
      outcome: { kind: 'succeeded' },
    });
    expect(op.inputHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(op.idempotencyKey).toMatch(/^idk_[A-Za-z0-9_-]{43}$/);
    expect(op.envelope).toEqual(res.body);
  });

  it('replays a duplicate (runId, callId) with the same arguments and refuses different ones', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const first = await api.call(keys.agent, runId, { callId: 'call_dup', name: 'get_order', arguments: { orderId: 'ord_2' } });
    // The same arguments as a JSON string with other key order freeze to the same hash.
    const again = await api.call(keys.agent, runId, { callId: 'call_dup', name: 'get_order', arguments: '{"orderId":"ord_2"}' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const conflict = await api.call(keys.agent, runId, { callId: 'call_dup', name: 'get_order', arguments: { orderId: 'ord_3' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ error: { code: 'call_id_conflict', message: expect.any(String) } });
    const events = await api.trace(keys.agent, runId);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(1);
    // The trace tells both: the replay (nothing ran) and the refused conflict with both argument hashes.
    const opId = first.body.logical_operation_id;
    expect(shape(events).slice(-2)).toEqual(['operation.replayed', 'call.conflict']);
    const [replayed, conflicted] = events.slice(-2);
    expect(replayed).toMatchObject({
      operationId: opId,
      callId: 'call_dup',
      detail: { inputHash: events[0].detail!.inputHash, requestedBy: 'agent' },
    });
    expect(conflicted).toMatchObject({
      operationId: opId,
      callId: 'call_dup',
      detail: { storedInputHash: events[0].detail!.inputHash, submittedInputHash: expect.stringMatching(/^sha256:/) },
    });
    expect(conflicted.detail!.submittedInputHash).not.toBe(conflicted.detail!.storedInputHash);
    expect(JSON.stringify(events)).not.toContain('ord_3');
    const run = await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent });
    expect(run.body.usage).toMatchObject({ toolCalls: 1, turns: 1 });
  });

  it('answers unknown tools and invalid arguments with envelopes and no attempt', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const unknown = await api.call(keys.agent, runId, { callId: 'call_u', name: 'launch_rocket', arguments: {} });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({
      status: 'rejected',
      code: 'unknown_tool',
      call_id: 'call_u',
      allowed_next_actions: ['choose_another_tool'],
    });

    const invalid = await api.call(keys.agent, runId, { callId: 'call_i', name: 'get_order', arguments: { orderId: 42 } });
    expect(invalid.body).toMatchObject({
      status: 'rejected',
      code: 'invalid_arguments',
      allowed_next_actions: ['retry_with_new_arguments'],
    });
    expect(invalid.body.message).toContain('orderId');

    const badJson = await api.call(keys.agent, runId, { callId: 'call_j', name: 'get_order', arguments: '{"orderId":' });
    expect(badJson.body).toMatchObject({ status: 'rejected', code: 'invalid_arguments', message: 'arguments is not valid JSON' });

    const events = await api.trace(keys.agent, runId);
    expect(events.some((e) => e.type.startsWith('attempt.'))).toBe(false);
    // Trace test "schema failure": no network span, nothing upstream.
    for (const reply of [unknown, invalid, badJson]) {
      expect(shape(events, reply.body.logical_operation_id)).toEqual([
        'operation.proposed',
        'policy.decision',
        'proposed>rejected',
        'result.recorded',
        'rejected>reported',
        'result.reported',
      ]);
    }
    expect(await stack.sandbox.ledger()).toEqual([]);
  });

  it('lists tools in each provider shape', async () => {
    const { api, keys } = stack;
    const neutral = await api.request('GET', '/v1/tools?format=neutral', { key: keys.agent });
    expect(neutral.status).toBe(200);
    const names = neutral.body.tools.map((t: { name: string }) => t.name).sort();
    expect(names).toEqual(['charge_card', 'get_order', 'send_email', 'update_shipping_address']);
    const getOrder = neutral.body.tools.find((t: { name: string }) => t.name === 'get_order');
    expect(getOrder.inputSchema).toMatchObject({
      type: 'object',
      properties: { orderId: { type: 'string' } },
      required: ['orderId'],
      additionalProperties: false,
    });
    expect(getOrder).toMatchObject({ risk: 'read', approval: 'never' });

    const openai = await api.request('GET', '/v1/tools?format=openai', { key: keys.agent });
    expect(openai.body.tools[0]).toMatchObject({
      type: 'function',
      function: { name: expect.any(String), parameters: { type: 'object' } },
    });
    const anthropic = await api.request('GET', '/v1/tools?format=anthropic', { key: keys.agent });
    expect(anthropic.body.tools[0]).toMatchObject({ name: expect.any(String), input_schema: { type: 'object' } });
    const mcp = await api.request('GET', '/v1/tools?format=mcp', { key: keys.agent });
    expect(mcp.body.tools[0]).toMatchObject({ name: expect.any(String), inputSchema: { type: 'object' } });
    const scoped = await api.request('GET', '/v1/tools', { key: keys.other });
    expect(scoped.body.tools.map((t: { name: string }) => t.name)).toEqual(['get_order']);
    expect((await api.request('GET', '/v1/tools?format=xml', { key: keys.agent })).status).toBe(400);
  });
});

describe('HTTP boundary', () => {
  it('creates a run once per Idempotency-Key (Powertools idempotency): a retry gets the same run, another body is refused', async () => {
    const { api, keys } = stack;
    const key = `runkey-${Date.now()}`;
    const body = { budgets: { maxToolCalls: 7 } };
    const first = await api.request('POST', '/v1/runs', { key: keys.agent, body, headers: { 'idempotency-key': key } });
    const again = await api.request('POST', '/v1/runs', { key: keys.agent, body, headers: { 'idempotency-key': key } });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body.runId).toBe(first.body.runId);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await api.request('POST', '/v1/runs', {
      key: keys.agent,
      body: { budgets: { maxToolCalls: 8 } },
      headers: { 'idempotency-key': key },
    });
    expect(other).toMatchObject({ status: 409, body: { error: { code: 'invalid_state' } } });
    // Without the header every request is a new run.
    const plain = await api.request('POST', '/v1/runs', { key: keys.agent, body });
    expect(plain.body.runId).not.toBe(first.body.runId);
  });

  it('serves health without a key and refuses everything else without one', async () => {
    const { api } = stack;
    expect(await api.request('GET', '/v1/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    for (const [method, path] of [
      ['POST', '/v1/runs'],
      ['GET', '/v1/runs/run_x'],
      ['GET', '/v1/tools'],
      ['GET', '/v1/approvals'],
    ] as const) {
      const res = await api.request(method, path);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: 'unauthenticated', message: expect.any(String) } });
    }
    expect((await api.request('POST', '/v1/runs', { key: 'tr_not_a_real_key_at_all' })).status).toBe(401);
  });

  it('rejects malformed JSON and missing fields with 400 and writes nothing', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const malformed = await api.request('POST', `/v1/runs/${runId}/tool-calls`, { key: keys.agent, raw: '{"callId": "x",' });
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    const missing = await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
      key: keys.agent,
      body: { callId: 'x', name: 'get_order' },
    });
    expect(missing).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(missing.body.error.message).toMatch(/turn|arguments/);
    expect(await api.trace(keys.agent, runId)).toEqual([]);
    const badBudget = await api.request('POST', '/v1/runs', { key: keys.agent, body: { budgets: { maxTurns: -1 } } });
    expect(badBudget.status).toBe(400);
  });

  it('refuses bodies over 256 KiB with 413', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const big = 'x'.repeat(256 * 1024 + 10);
    const res = await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
      key: keys.agent,
      body: { callId: 'c', turn: 1, name: 'get_order', arguments: { orderId: big } },
    });
    expect(res).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
    expect(await api.trace(keys.agent, runId)).toEqual([]);
  });

  it('counts a body sent without a length (chunked) as it streams in: 413 over 256 KiB, accepted under it', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const chunked = (text: string) =>
      fetch(`${api.baseUrl}/v1/runs/${runId}/tool-calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.agent}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          start(controller) {
            // In 16 KiB pieces, so the body arrives as many chunks.
            for (let i = 0; i < text.length; i += 16 * 1024) controller.enqueue(new TextEncoder().encode(text.slice(i, i + 16 * 1024)));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
    const call = (orderId: string) => JSON.stringify({ callId: 'c_chunked', turn: 1, name: 'get_order', arguments: { orderId } });
    const over = await chunked(call('x'.repeat(256 * 1024 + 10)));
    expect(over.status).toBe(413);
    expect(await over.json()).toMatchObject({ error: { code: 'payload_too_large' } });
    expect(await api.trace(keys.agent, runId)).toEqual([]);
    const under = await chunked(call('ord_1'));
    expect(under.status).toBe(200);
    expect(await under.json()).toMatchObject({ status: 'succeeded' });
  });

  it('keeps another principal out of a run and its operations', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const call = await api.call(keys.agent, runId, { callId: 'call_p', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.other })).status).toBe(403);
    expect((await api.request('GET', `/v1/runs/${runId}/trace`, { key: keys.other })).status).toBe(403);
    expect((await api.call(keys.other, runId, { callId: 'call_q', name: 'get_order', arguments: { orderId: 'ord_1' } })).status).toBe(403);
    expect((await api.request('GET', `/v1/operations/${call.body.logical_operation_id}`, { key: keys.other })).status).toBe(403);
    expect((await api.request('GET', `/v1/runs/run_doesnotexist`, { key: keys.agent })).status).toBe(404);
    expect((await api.request('GET', `/v1/operations/op_doesnotexist`, { key: keys.agent })).status).toBe(404);
    // A reviewer may read any operation and trace.
    expect((await api.request('GET', `/v1/operations/${call.body.logical_operation_id}`, { key: keys.reviewer })).status).toBe(200);
  });

  it('answers 202 with a status URL when the wait is over first', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const res = await api.call(keys.agent, runId, { callId: 'call_nowait', name: 'get_order', arguments: { orderId: 'ord_4' } }, 0);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      operationId: expect.stringMatching(/^op_/),
      state: expect.any(String),
      statusUrl: `/v1/operations/${res.body.operationId}`,
    });
    const done = await api.until(
      'reported',
      () => api.operation(keys.agent, res.body.operationId),
      (op) => op.state === 'reported',
    );
    expect(done.envelope.status).toBe('succeeded');
  });
});
