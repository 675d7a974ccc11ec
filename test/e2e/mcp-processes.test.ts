import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { derivedCallId } from '../../functions/mcp/tool-calls';
import { startTestStack, type TestStack } from '../support/stack';
import { approvedChargeTask, hangingChargeTask } from '../support/scenarios';

/**
 * Behind API Gateway + Lambda, consecutive requests of one MCP session reach different processes. Here two
 * API processes (the test stack and a child process with its own memory and engine) share one DynamoDB
 * Local, tables and configuration, and each request of one session goes to the process a router picks.
 */
type Where = 'first' | 'second';
let stack: TestStack;
let second: { apiUrl: string; stop(): Promise<void> } | undefined;
const clients: Client[] = [];

beforeAll(async () => {
  // A shorter wait so "still pending" is reached sooner; the default is 25 s. The child process inherits it.
  process.env.TOOLRUNNER_MCP_WAIT_MS = '8000';
  stack = await startTestStack();
  second = await stack.anotherProcess?.();
}, 240_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await second?.stop();
  await stack?.stop();
});
beforeEach(async (ctx) => {
  if (!second) ctx.skip();
  await stack.sandbox.reset();
});

const baseOf = (where: Where) => (where === 'first' ? stack.apiUrl : second!.apiUrl);

interface Routed {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** `method@process` for every HTTP request the client made, in order. */
  served: string[];
  runId(): string;
}

/** An MCP client whose every HTTP request goes to the process `route` picks for its JSON-RPC method. */
async function routedClient(route: (method: string) => Where, key = stack.keys.agent): Promise<Routed> {
  const served: string[] = [];
  let runId = '';
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: async (url, init) => {
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      const method = (Array.isArray(body) ? body[0]?.method : body?.method) ?? init?.method ?? 'GET';
      const where = route(method);
      served.push(`${method}@${where}`);
      const res = await fetch(new URL(new URL(url).pathname, baseOf(where)), init);
      runId ||= res.headers.get('toolrunner-run-id') ?? '';
      return res;
    },
  });
  const client = new Client({ name: 'toolrunner-processes-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport, served, runId: () => runId };
}

/** One raw JSON-RPC POST of a session to one process. */
async function post(where: Where, sessionId: string, message: object, key = stack.keys.agent): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseOf(where)}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('one MCP session served by two API processes', () => {
  it('initialize on one process; tools/list and tools/call on the other; each call a turn counted in the run', async () => {
    const { client, transport, served, runId } = await routedClient((method) => (method === 'initialize' ? 'first' : 'second'));
    const sessionId = transport.sessionId!;
    expect(runId()).toMatch(/^run_/);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('toolrunner_check_operation');
    const read = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_5' } });
    expect(read).toMatchObject({ isError: false, structuredContent: { status: 'succeeded', result: { id: 'ord_5' } } });
    // (The client's probe for a server-sent stream, a GET, is answered 405 by whichever process it reaches.)
    expect(served.filter((s) => !s.startsWith('GET@'))).toEqual([
      'initialize@first',
      'notifications/initialized@second',
      'tools/list@second',
      'tools/call@second',
    ]);

    // The same session's next call on the first process: the same run, the next turn (read from the run's record).
    const callId = 'req-on-first';
    const other = await post('first', sessionId, {
      id: callId,
      method: 'tools/call',
      params: { name: 'get_order', arguments: { orderId: 'ord_6' } },
    });
    expect(other.status).toBe(200);
    expect(other.body.result.structuredContent).toMatchObject({ status: 'succeeded', call_id: derivedCallId(sessionId, callId) });
    const ops = await Promise.all(
      [read.structuredContent, other.body.result.structuredContent].map((e: any) =>
        stack.api.operation(stack.keys.agent, e.logical_operation_id),
      ),
    );
    expect(ops.map((op) => [op.runId, op.turn])).toEqual([
      [runId(), 1],
      [runId(), 2],
    ]);
    expect(ops[0].callId).toMatch(/^mcp_[A-Za-z0-9_-]{22}$/);
    expect((await stack.api.request('GET', `/v1/runs/${runId()}`, { key: stack.keys.agent })).body.usage).toMatchObject({
      turns: 2,
      toolCalls: 2,
    });

    // toolrunner_check_operation on one process reads a call made through the other.
    const checked = await post('first', sessionId, {
      id: 'check',
      method: 'tools/call',
      params: { name: 'toolrunner_check_operation', arguments: { operationId: (read.structuredContent as any).logical_operation_id } },
    });
    expect(checked.body.result.structuredContent).toEqual(read.structuredContent);

    // A resend of the same request to the other process derives the same callId: a replay, not a second call.
    const resent = await post('second', sessionId, {
      id: callId,
      method: 'tools/call',
      params: { name: 'get_order', arguments: { orderId: 'ord_6' } },
    });
    expect(resent.body.result.structuredContent).toEqual(other.body.result.structuredContent);
    expect((await stack.api.trace(stack.keys.agent, runId())).filter((e) => e.type === 'operation.proposed')).toHaveLength(2);
  });

  it('refuses a tampered session id (404) and another principal presenting the id (403), on either process', async () => {
    const { transport } = await routedClient(() => 'first');
    const sessionId = transport.sessionId!;
    const [payload, mac] = sessionId.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const otherRun = `${Buffer.from(JSON.stringify({ ...claims, r: 'run_someone_else' })).toString('base64url')}.${mac}`;
    for (const where of ['first', 'second'] as const) {
      expect((await post(where, sessionId, { id: 1, method: 'ping' })).status).toBe(200);
      expect((await post(where, otherRun, { id: 2, method: 'tools/list' })).status).toBe(404);
      expect((await post(where, `${sessionId}x`, { id: 3, method: 'tools/list' })).status).toBe(404);
      const foreign = await post(where, sessionId, { id: 4, method: 'tools/list' }, stack.keys.other);
      expect(foreign.status).toBe(403);
      expect(foreign.body.error.data.code).toBe('forbidden');
    }
  });

  it('tasks: created on one process, read, listed and completed on the other; tasks/cancel across processes', async () => {
    const { client, served } = await routedClient((method) => (method.startsWith('tasks/') ? 'second' : 'first'));
    // The client learns from the list which tools may run as tasks.
    await client.listTools();
    const { statuses, taskId, result } = await approvedChargeTask(stack, client, 'cus_two_processes');
    expect(statuses).toContain('input_required');
    expect(result).toMatchObject({ isError: false, structuredContent: { status: 'succeeded', logical_operation_id: taskId } });
    expect(served).toContain('tools/call@first');
    expect(served.filter((s) => s.startsWith('tasks/')).every((s) => s.endsWith('@second'))).toBe(true);
    expect(served.some((s) => s.startsWith('tasks/get@'))).toBe(true);
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);

    const { stream, taskId: hanging } = await hangingChargeTask(stack, client);
    expect(await client.experimental.tasks.cancelTask(hanging)).toMatchObject({ taskId: hanging, status: 'cancelled' });
    expect(served.at(-1)).toBe('tasks/cancel@second');
    expect(await stack.api.operation(stack.keys.agent, hanging)).toMatchObject({ state: 'reported', envelope: { status: 'cancelled' } });
    await stream.return(undefined);
  });

  it('notifications/cancelled reaching another process than the call cancels its operation', async () => {
    const { client, transport, served, runId } = await routedClient((method) =>
      method === 'notifications/cancelled' ? 'second' : 'first',
    );
    await stack.sandbox.fault({ route: 'POST /v1/charges', mode: 'hang', count: 3 });
    const controller = new AbortController();
    const call = client.callTool({ name: 'charge_card', arguments: { amount: 200, currency: 'USD', customer: 'c' } }, undefined, {
      signal: controller.signal,
    });
    const op = await stack.api.until(
      'the attempt to start',
      async () => {
        const [id] = runId() ? await stack.api.client(stack.keys.agent).operationIdsOfRun(runId()) : [];
        return id ? stack.api.operation(stack.keys.agent, id) : undefined;
      },
      (o) => o?.state === 'executing',
    );
    // The call's callId is derived from the session and the request id, so the other process finds it.
    expect(op.callId).toMatch(/^mcp_/);
    expect(op.callId).not.toContain(transport.sessionId!.slice(0, 10));
    controller.abort('the user pressed stop');
    await expect(call).rejects.toThrow();
    const cancelled = await stack.api.until(
      'the cancellation',
      () => stack.api.operation(stack.keys.agent, op.operationId),
      (o) => o.state === 'reported',
    );
    expect(cancelled.envelope).toMatchObject({ status: 'cancelled', code: 'cancelled' });
    expect(served).toContain('notifications/cancelled@second');
    expect(served.filter((s) => s.startsWith('tools/call@'))).toEqual(['tools/call@first']);
  });

  it('GET and DELETE are 405: nothing is streamed, nothing is kept to end', async () => {
    const { transport } = await routedClient(() => 'second');
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${second!.apiUrl}/mcp`, {
        method,
        headers: { authorization: `Bearer ${stack.keys.agent}`, 'mcp-session-id': transport.sessionId!, accept: 'text/event-stream' },
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });
});

describe('MCP sessions across a restart', () => {
  it('a session opened before the stack restarts is served after it, in the same run, at the next turn', async (ctx) => {
    if (!stack.restart) ctx.skip();
    const { client, transport, runId } = await routedClient(() => 'first');
    const before = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_8' } });
    expect(before.structuredContent).toMatchObject({ status: 'succeeded' });
    const oldUrl = stack.apiUrl;
    await stack.restart!();
    expect(stack.apiUrl).not.toBe(oldUrl);

    // The client keeps its session id; the router now reaches the restarted stack's new port.
    const after = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_9' } });
    expect(after).toMatchObject({ isError: false, structuredContent: { status: 'succeeded', result: { id: 'ord_9' } } });
    const op = await stack.api.operation(stack.keys.agent, (after.structuredContent as any).logical_operation_id);
    expect(op).toMatchObject({ runId: runId(), turn: 2 });
    expect((await client.listTools()).tools.length).toBeGreaterThan(1);
    expect(transport.sessionId).toBeTruthy();
  });
});
