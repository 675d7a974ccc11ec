import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decideApproval } from '../support/people';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce, isEmbedded, Target } from '../support/target';
import { approvedChargeTask, hangingChargeTask } from '../support/scenarios';

let stack: TestStack;
const clients: Client[] = [];
beforeAll(async () => {
  // A shorter wait so "still pending" is reached sooner; the default is 25 s.
  process.env.TOOLRUNNER_MCP_WAIT_MS = '8000';
  stack = await startTestStack({ seed: 11 });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await stack?.stop();
  delete process.env.TOOLRUNNER_MCP_WAIT_MS;
});
beforeEach(async () => stack.sandbox.reset());

async function connect(
  key: string,
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'toolrunner-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

/** The run a session works in, found through the API from an operation it created. */
async function runOf(operationId: string): Promise<string> {
  return (await stack.api.operation(stack.keys.agent, operationId)).runId;
}

describe('MCP server at /mcp', () => {
  it("lists the principal's tools with policy annotations and the built-in check tool", async () => {
    const { client } = await connect(stack.keys.agent);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'charge_card',
      'get_order',
      'send_email',
      'toolrunner_check_operation',
      'update_shipping_address',
    ]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.get_order.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true });
    expect(byName.charge_card.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: true,
    });
    expect(byName.send_email.annotations).toMatchObject({ destructiveHint: true, idempotentHint: false });
    expect(byName.update_shipping_address.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
    expect(byName.charge_card.inputSchema).toMatchObject({ type: 'object', required: ['amount', 'currency', 'customer'] });

    const { client: scoped } = await connect(stack.keys.other);
    expect((await scoped.listTools()).tools.map((t) => t.name).sort()).toEqual(['get_order', 'toolrunner_check_operation']);
  });

  it('runs a read and a write in one run, each call a new turn', async () => {
    const { client } = await connect(stack.keys.agent);
    const read = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_7' } });
    expect(read.isError).toBe(false);
    expect(read.structuredContent).toMatchObject({ status: 'succeeded', result: { id: 'ord_7' } });
    expect(JSON.parse((read.content as any)[0].text)).toEqual(read.structuredContent);

    const address = { line1: '1 Main St', city: 'Springfield', postalCode: '12345', country: 'US' };
    const write = await client.callTool({ name: 'update_shipping_address', arguments: { orderId: 'ord_7', address } });
    expect(write.structuredContent).toMatchObject({ status: 'succeeded', result: { shippingAddress: address } });

    const runId = await runOf((read.structuredContent as any).logical_operation_id);
    expect(await runOf((write.structuredContent as any).logical_operation_id)).toBe(runId);
    const run = await stack.api.request('GET', `/v1/runs/${runId}`, { key: stack.keys.agent });
    expect(run.body.usage).toMatchObject({ turns: 2, toolCalls: 2 });
  });

  it('a write needing approval answers pending, then the check tool gives the envelope once approved', async () => {
    const { client } = await connect(stack.keys.agent);
    const big = { amount: 60_000, currency: 'USD', customer: 'cus_mcp' };
    const first = await client.callTool({
      name: 'charge_card',
      arguments: big,
      _meta: { 'toolrunner/callId': 'mcp_big_1', 'toolrunner/turn': 1 },
    });
    expect(first.isError).toBe(false);
    expect(first.structuredContent).toMatchObject({
      status: 'pending',
      state: 'awaiting_approval',
      operationId: expect.stringMatching(/^op_/),
    });
    expect((first.content as any)[0].text).toContain('toolrunner_check_operation');
    const { operationId } = first.structuredContent as { operationId: string };
    expect((await stack.api.operation(stack.keys.agent, operationId)).callId).toBe('mcp_big_1');

    const before = await client.callTool({ name: 'toolrunner_check_operation', arguments: { operationId } });
    expect(before.structuredContent).toMatchObject({ status: 'pending' });
    await decideApproval(stack, operationId, 'approve');
    const checked = await stack.api.until(
      'the approved charge to report',
      () => client.callTool({ name: 'toolrunner_check_operation', arguments: { operationId } }),
      (r) => (r.structuredContent as any).status !== 'pending',
    );
    expect(checked).toMatchObject({ isError: false, structuredContent: { status: 'succeeded', result: { amount: 60_000 } } });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge')).toHaveLength(1);
  });

  it('rejected and refused calls are errors the model can read', async () => {
    const { client } = await connect(stack.keys.agent);
    const invalid = await client.callTool({ name: 'charge_card', arguments: { amount: 'lots' } });
    expect(invalid).toMatchObject({ isError: true, structuredContent: { status: 'rejected', code: 'invalid_arguments' } });
    const unknown = await client.callTool({ name: 'drop_tables', arguments: {} });
    expect(unknown).toMatchObject({ isError: true, structuredContent: { status: 'rejected', code: 'unknown_tool' } });
    const big = { amount: 90_000, currency: 'USD', customer: 'cus_no' };
    const pending = await client.callTool({ name: 'charge_card', arguments: big });
    await decideApproval(stack, (pending.structuredContent as any).operationId, 'reject');
    const rejected = await stack.api.until(
      'the rejection',
      () =>
        client.callTool({ name: 'toolrunner_check_operation', arguments: { operationId: (pending.structuredContent as any).operationId } }),
      (r) => (r.structuredContent as any).status !== 'pending',
    );
    expect(rejected).toMatchObject({ isError: true, structuredContent: { status: 'rejected', code: 'approval_rejected' } });

    // The same callId with other arguments is the API's 409, passed on as an error result.
    await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_1' }, _meta: { 'toolrunner/callId': 'mcp_dup' } });
    const conflict = await client.callTool({
      name: 'get_order',
      arguments: { orderId: 'ord_2' },
      _meta: { 'toolrunner/callId': 'mcp_dup' },
    });
    expect(conflict).toMatchObject({ isError: true, structuredContent: { error: { code: 'call_id_conflict' } } });

    const { client: scoped } = await connect(stack.keys.other);
    const forbidden = await scoped.callTool({ name: 'send_email', arguments: { to: 'a@example.com', subject: 's', body: 'b' } });
    expect(forbidden).toMatchObject({ isError: true, structuredContent: { status: 'rejected', code: 'forbidden' } });
    expect(await stack.sandbox.ledger()).toEqual([]);
  });

  it("joins an open run named by Toolrunner-Run-Id, and only the caller's own", async () => {
    const runId = await stack.api.createRun(stack.keys.agent);
    const { client } = await connect(stack.keys.agent, { 'Toolrunner-Run-Id': runId });
    const read = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_3' } });
    expect(await runOf((read.structuredContent as any).logical_operation_id)).toBe(runId);

    await expect(connect(stack.keys.other, { 'Toolrunner-Run-Id': runId })).rejects.toThrow(/forbidden/);
    await stack.api.request('POST', `/v1/runs/${runId}/cancel`, { key: stack.keys.agent });
    await expect(connect(stack.keys.agent, { 'Toolrunner-Run-Id': runId })).rejects.toThrow(/run_closed/);
    await expect(connect('tr_not_a_key_at_all_000')).rejects.toThrow();
  });

  it('a session answers only the key that opened it', async () => {
    const { client, transport } = await connect(stack.keys.agent);
    await client.listTools();
    const res = await fetch(`${stack.apiUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.keys.other}`,
        'mcp-session-id': transport.sessionId!,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
    });
    expect(res.status).toBe(403);
  });

  it('a body over 256 KiB is 413 payload_too_large, with or without a declared length', async () => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(256 * 1024) } });
    const post = (body: BodyInit) =>
      fetch(`${stack.apiUrl}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.keys.agent}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
        duplex: 'half',
      } as RequestInit);
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(text));
        controller.close();
      },
    });
    for (const res of [await post(text), await post(chunked)]) {
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ error: { data: { code: 'payload_too_large' } } });
    }
  });

  it.runIf(isEmbedded)(
    'an Origin other than its own is 403 unless the config lists it in mcpAllowedOrigins',
    async () => {
      const initialize = (origin: string) =>
        fetch(`${stack.apiUrl}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${stack.keys.agent}`,
            origin,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'origin-test', version: '1' } },
          }),
        });
      expect((await initialize(new URL(stack.apiUrl).origin)).status).toBe(200);
      const refused = await initialize('https://app.example.com');
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ error: { data: { code: 'forbidden' } } });
      stack.editConfig((config) => {
        config.mcpAllowedOrigins = ['https://app.example.com'];
      });
      // The runner re-reads the config file when it changes; functions of the template keep their copy up to 30 s.
      await stack.api.until(
        'the allowed origin to apply',
        () => initialize('https://app.example.com').then((r) => r.status),
        (s) => s === 200,
        configEditsApplyAtOnce ? 30_000 : 90_000,
      );
      expect((await initialize('https://other.example.com')).status).toBe(403);
    },
    180_000,
  );

  // The session's wait is the test's 8 s only where the API runs in this process's environment: in template
  // mode the API Lambda has exactly the template's environment, so it waits the deployed 25 s, by which time
  // all three attempts of this read (5 s each) have ended and the call is `failed`, as it should be.
  it.skipIf(Target === 'template')('a slow call answers pending after the wait', async () => {
    const { client } = await connect(stack.keys.agent);
    // Three attempts each hang to the read's 5 s timeout, so the call outlives the session's 8 s wait.
    await stack.sandbox.fault({ route: 'GET /v1/orders/ord_99', mode: 'hang', count: 3 });
    const slow = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_99' } });
    expect(slow).toMatchObject({ isError: false, structuredContent: { status: 'pending', operationId: expect.any(String) } });
  });

  // No callId in `_meta`: the runner derives it from the session and the request id, so the cancellation finds
  // the operation in whichever process it reaches (in template mode a Lambda other than the one still waiting).
  it('a cancelled call cancels its operation', async () => {
    const { client } = await connect(stack.keys.agent);
    const first = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_98' } });
    const read = (first.structuredContent as any).logical_operation_id as string;
    const runId = await runOf(read);
    await stack.sandbox.fault({ route: 'POST /v1/charges', mode: 'hang', count: 3 });
    const controller = new AbortController();
    const call = client.callTool({ name: 'charge_card', arguments: { amount: 200, currency: 'USD', customer: 'c' } }, undefined, {
      signal: controller.signal,
    });
    // The call reaches the runner in its own time: wait for its attempt to start.
    const started = await stack.api.until(
      'the attempt to start',
      () => stack.api.trace(stack.keys.agent, runId),
      (events) => events.some((e) => e.type === 'attempt.started' && e.operationId !== read),
    );
    const operationId = started.find((e) => e.type === 'attempt.started' && e.operationId !== read)!.operationId!;
    controller.abort('the user pressed stop');
    await expect(call).rejects.toThrow();
    const op = await stack.api.until(
      'the cancellation',
      () => stack.api.operation(stack.keys.agent, operationId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'cancelled', code: 'cancelled' });
  });
});

describe('MCP tasks: the operation is the task', () => {
  it('a task waits through approval (input_required) and ends with the envelope; tasks/get reads the operation', async () => {
    const { client } = await connect(stack.keys.agent);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'charge_card')!.execution).toEqual({ taskSupport: 'optional' });

    const { statuses, taskId, result } = await approvedChargeTask(stack, client, 'cus_task');
    expect(taskId).toMatch(/^op_/);
    expect(statuses).toContain('input_required');
    expect(statuses).not.toContain('completed');
    expect(result).toMatchObject({
      isError: false,
      structuredContent: { status: 'succeeded', logical_operation_id: taskId, result: { amount: 70_000 } },
    });
    expect(await client.experimental.tasks.getTask(taskId!)).toMatchObject({ taskId, status: 'completed' });
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);

    // The task is the operation: a new session of the same key (a reconnect) reads it too; another key's cannot.
    const { client: again } = await connect(stack.keys.agent);
    expect(await again.experimental.tasks.getTask(taskId!)).toMatchObject({ taskId, status: 'completed' });

    const { client: other } = await connect(stack.keys.other);
    await expect(other.experimental.tasks.getTask(taskId!)).rejects.toThrow(/not found/i);
  });

  it('tasks/cancel cancels the operation', async () => {
    const { client } = await connect(stack.keys.agent);
    await client.listTools();
    const { stream, taskId } = await hangingChargeTask(stack, client);
    expect(await client.experimental.tasks.cancelTask(taskId)).toMatchObject({ taskId, status: 'cancelled' });
    expect(await stack.api.operation(stack.keys.agent, taskId)).toMatchObject({ state: 'reported', envelope: { status: 'cancelled' } });
    await stream.return(undefined);
  });
});
