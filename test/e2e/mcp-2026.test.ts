import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operationIdFor } from '../../functions/core/ids';
import { derivedCallId } from '../../functions/mcp/modern';
import { decideApproval } from '../support/people';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode, isEmbedded } from '../support/target';

/**
 * `/mcp` at revision 2026-07-28 through the SDK's v2 client: no handshake, no session; every request carries
 * its own `_meta`. The run comes from the principal's current MCP run, the callId from (run, tool, arguments).
 */
const TASKS = 'io.modelcontextprotocol/tasks';
let stack: TestStack;
const clients: Client[] = [];

beforeAll(async () => {
  process.env.TOOLRUNNER_MCP_WAIT_MS = '8000';
  stack = await startTestStack({ seed: 26 });
}, 240_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await stack?.stop();
  delete process.env.TOOLRUNNER_MCP_WAIT_MS;
});
beforeEach(async () => stack.sandbox.reset());

/** A 2026-07-28 client whose requests follow the stack wherever it listens now (a restart moves it). */
async function connect(key: string, options: { tasks?: boolean; signal?: () => AbortSignal | undefined } = {}): Promise<Client> {
  const client = new Client(
    { name: 'toolrunner-2026-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: options.tasks ? { extensions: { [TASKS]: {} } } : {} },
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: (url, init) => fetch(new URL(new URL(url).pathname, stack.apiUrl), { ...init, signal: options.signal?.() ?? init?.signal }),
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const runOf = (reply: { _meta?: Record<string, unknown> }) => reply._meta?.['toolrunner/runId'] as string;

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

function headers2026(key: string, method: string, name: string): Record<string, string> {
  return {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    'mcp-name': name,
  };
}

/** One 2026-07-28 request by hand: its result, or throws its error. */
async function post2026(key: string, method: string, name: string, params: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await fetch(`${stack.apiUrl}/mcp`, {
    method: 'POST',
    headers: headers2026(key, method, name),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (!body.result) throw new Error(`${method}: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body.result;
}

/** A request the SDK's typed surface does not know (the tasks extension), its result unchecked. */
const raw = (client: Client, method: string, params: Record<string, unknown>) =>
  client.request({ method, params }, z.looseObject({})) as Promise<Record<string, any>>;

describe('MCP 2026-07-28 at /mcp', () => {
  it('discovers, lists and calls without a session; every reply names the run, the current one until a new one is started', async () => {
    const client = await connect(stack.keys.agent);
    expect(client.getNegotiatedProtocolVersion?.() ?? '2026-07-28').toBe('2026-07-28');
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual([
      'charge_card',
      'get_order',
      'send_email',
      'toolrunner_check_operation',
      'toolrunner_start_run',
      'update_shipping_address',
    ]);
    const runId = runOf(listed);
    expect(runId).toMatch(/^run_/);

    const read = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_26' } });
    expect(read.isError).toBe(false);
    expect(read.structuredContent).toMatchObject({ status: 'succeeded', result: { id: 'ord_26' } });
    expect(runOf(read)).toBe(runId);
    // Another client of the same principal, with nothing in common but the key, joins the same run.
    const other = await connect(stack.keys.agent);
    expect(runOf(await other.callTool({ name: 'get_order', arguments: { orderId: 'ord_27' } }))).toBe(runId);

    const started = await client.callTool({ name: 'toolrunner_start_run', arguments: {} });
    const next = (started.structuredContent as { runId: string }).runId;
    expect(next).not.toBe(runId);
    expect(runOf(started)).toBe(next);
    expect(runOf(await other.callTool({ name: 'get_order', arguments: { orderId: 'ord_26' } }))).toBe(next);
    expect((await stack.api.client(stack.keys.agent).getRun(next)).budgets).toMatchObject({ maxIdenticalCalls: 5 });
    // Another principal has a current run of its own.
    const scoped = await connect(stack.keys.other);
    expect(runOf(await scoped.listTools())).not.toBe(next);
  });

  it('concurrent first requests of a principal agree on one current run; an idle one is replaced', async () => {
    const clients = await Promise.all(Array.from({ length: 6 }, () => connect(stack.keys.admin)));
    const runs = await Promise.all(clients.map(async (c) => runOf(await c.listTools())));
    expect(new Set(runs).size).toBe(1);
    const [runId] = runs;
    // The clock below is the one the Api uses only where it runs from source in this process (not in template workers).
    if (handlerMode !== 'source' || !stack.deps) return;
    stack.editConfig((config) => {
      config.mcpRunIdleMinutes = 2;
    });
    const realNow = stack.deps.now;
    try {
      stack.deps.now = () => realNow() + 60_000;
      expect(runOf(await clients[0].listTools())).toBe(runId);
      stack.deps.now = () => realNow() + 3 * 60_000;
      const next = runOf(await clients[1].listTools());
      expect(next).not.toBe(runId);
      expect(runOf(await clients[2].listTools())).toBe(next);
    } finally {
      stack.deps.now = realNow;
      stack.editConfig((config) => {
        delete config.mcpRunIdleMinutes;
      });
    }
  });

  it('a charge re-issued with a new request id after its stream was cut is the same operation: one charge', async () => {
    const client = await connect(stack.keys.agent);
    const runId = runOf(await client.callTool({ name: 'toolrunner_start_run', arguments: {} }));
    const args = { amount: 300, currency: 'USD', customer: 'cus_cut' };
    const operationId = operationIdFor(runId, derivedCallId(runId, 'charge_card', args));
    // The upstream commits the charge and answers 4 s later; the client's stream breaks before that.
    await stack.sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 4_000 });
    const cut = new AbortController();
    const first = client.callTool({ name: 'charge_card', arguments: args }, { signal: cut.signal }).then(
      () => 'answered',
      () => 'cut',
    );
    await stack.api.until(
      'the charge to be in flight',
      () => stack.api.operation(stack.keys.agent, operationId).catch(() => undefined),
      (op) => op?.state === 'executing',
    );
    cut.abort();
    expect(await first).toBe('cut');

    const again = await client.callTool({ name: 'charge_card', arguments: args });
    expect(again.structuredContent).toMatchObject({ status: 'succeeded', logical_operation_id: operationId });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_cut');
    expect(charges).toHaveLength(1);
    const trace = await stack.api.trace(stack.keys.agent, runId);
    expect(trace.filter((e) => e.type === 'operation.replayed' && e.operationId === operationId)).toHaveLength(1);
  }, 120_000);

  it.runIf(isEmbedded)(
    'an approval is a task for clients that take tasks, followed across a restart of the stack',
    async () => {
      const client = await connect(stack.keys.agent, { tasks: true });
      const runId = runOf(await client.callTool({ name: 'toolrunner_start_run', arguments: {} }));
      // The SDK's client has no tasks extension yet (it refuses `resultType: "task"`): this one request is sent by hand.
      const created = await post2026(stack.keys.agent, 'tools/call', 'charge_card', {
        name: 'charge_card',
        arguments: { amount: 70_000, currency: 'USD', customer: 'cus_task' },
        _meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } } },
      });
      expect(created).toMatchObject({ resultType: 'task', status: 'working', ttlMs: null, pollIntervalMs: 5_000 });
      const taskId = created.taskId as string;
      expect(created._meta).toMatchObject({ 'toolrunner/runId': runId });
      expect((await stack.api.operation(stack.keys.agent, taskId)).state).toBe('awaiting_approval');

      await stack.restart!();
      const working = await raw(client, 'tasks/get', { taskId });
      expect(working).toMatchObject({ taskId, status: 'working', statusMessage: 'waiting for a person to approve it' });
      expect(working.result).toBeUndefined();

      await decideApproval(stack, taskId, 'approve');
      const done = await stack.api.until(
        'the task to complete',
        async () => await raw(client, 'tasks/get', { taskId }),
        (task) => task.status === 'completed',
      );
      expect(done.result).toMatchObject({ isError: false, structuredContent: { status: 'succeeded', logical_operation_id: taskId } });
      expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_task')).toHaveLength(1);
      // Cancelling a finished task is an empty acknowledgement; it stays completed.
      expect(await raw(client, 'tasks/cancel', { taskId })).toMatchObject({});
      expect(await raw(client, 'tasks/get', { taskId })).toMatchObject({ status: 'completed' });
    },
    240_000,
  );

  it('a client without the tasks extension gets the pending answer, and tasks/get is refused as a missing capability', async () => {
    const client = await connect(stack.keys.agent);
    await client.callTool({ name: 'toolrunner_start_run', arguments: {} });
    const pending = await client.callTool({ name: 'charge_card', arguments: { amount: 70_000, currency: 'USD', customer: 'cus_pending' } });
    expect(pending.isError).toBe(false);
    expect(pending.structuredContent).toMatchObject({ status: 'pending', state: 'awaiting_approval' });
    const taskId = (pending.structuredContent as { operationId: string }).operationId;
    await expect(raw(client, 'tasks/get', { taskId })).rejects.toMatchObject({ code: -32021 });
  });

  it('refuses what /v1 refuses: __proto__, numbers JSON cannot carry, nesting past the bound, as invalid params', async () => {
    const post = (text: string) =>
      fetch(`${stack.apiUrl}/mcp`, { method: 'POST', headers: headers2026(stack.keys.agent, 'tools/call', 'charge_card'), body: text });
    const call = (args: string) =>
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"charge_card","arguments":${args},"_meta":${JSON.stringify(META)}}}`;
    // 40,000 levels: deep enough to overflow a recursive parser, small enough for the 256 KiB body limit.
    const deep = `${'{"a":'.repeat(40_000)}1${'}'.repeat(40_000)}`;
    for (const args of [
      '{"__proto__":{"amount":1},"amount":300,"currency":"USD","customer":"c"}',
      '{"amount":1e999,"currency":"USD","customer":"c"}',
      deep,
    ]) {
      const res = await post(call(args));
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe(-32602);
      expect(body.error.message).not.toMatch(/at .*\(|stack|Maximum call stack/);
    }
    // The same at 2025-11-25 (no `_meta` envelope): refused before any session is looked at.
    const legacy = await fetch(`${stack.apiUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.keys.agent}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"charge_card","arguments":{"__proto__":{}}}}',
    });
    expect(legacy.status).toBe(400);
    expect((await legacy.json()).error).toMatchObject({ code: -32602, message: expect.stringContaining('__proto__') });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge')).toEqual([]);
  });

  it("a client's mistake the API refuses is invalid params with the API's message, at either revision", async () => {
    const big = { amount: 300, currency: 'USD', customer: 'x'.repeat(130 * 1024) };
    const client = await connect(stack.keys.agent);
    await expect(client.callTool({ name: 'charge_card', arguments: big })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('arguments: over 128 KiB'),
    });
    const legacy = new LegacyClient({ name: 'toolrunner-2025-test', version: '1.0.0' });
    await legacy.connect(
      new LegacyTransport(new URL(`${stack.apiUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${stack.keys.agent}` } } }),
    );
    try {
      await expect(legacy.callTool({ name: 'charge_card', arguments: big })).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining('arguments: over 128 KiB'),
      });
    } finally {
      await legacy.close();
    }
  });
});
