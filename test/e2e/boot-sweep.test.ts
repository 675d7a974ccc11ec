import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * Two processes on one DynamoDB: the second one's boot sweep resumes only operations whose leases have
 * passed, never one the first process is still working on (its lease live), whose result would be lost.
 */
let stack: TestStack;
let second: { apiUrl: string; stop(): Promise<void> } | undefined;
let upstream: Awaited<ReturnType<typeof startHeldUpstream>>;

/** An MCP upstream whose one tool holds each call until the test releases it. */
async function startHeldUpstream() {
  const pending: { id: unknown; res: ServerResponse }[] = [];
  let calls = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: unknown; method?: string; params?: any };
    const reply = (result: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (req.method !== 'POST') return void res.writeHead(405).end();
    if (message.id === undefined) return void res.writeHead(202).end();
    if (message.method === 'initialize')
      return reply({
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'held', version: '1' },
      });
    if (message.method === 'tools/list')
      return reply({
        tools: [
          {
            name: 'create',
            description: 'Creates a thing, slowly.',
            inputSchema: { type: 'object', properties: { title: { type: 'string' } } },
          },
        ],
      });
    if (message.method !== 'tools/call')
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'method not found' } }));
    calls++;
    pending.push({ id: message.id, res });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    calls: () => calls,
    /** Answers every held call: the thing was created. */
    release() {
      for (const { id, res } of pending.splice(0))
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            result: { content: [{ type: 'text', text: 'created' }], structuredContent: { id: 'thing_1' } },
          }),
        );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  if (!isEmbedded) return;
  upstream = await startHeldUpstream();
  stack = await startTestStack();
  stack.editConfig((config) => {
    // A write with no reconcile and one attempt: a presumed-lost attempt would be an unknown outcome for a person.
    config.mcpUpstreams = [
      { name: 'held', url: upstream.url, tools: { create: { risk: 'irreversible_write', maxAttempts: 1, timeoutMs: 120_000 } } },
    ];
  });
}, 240_000);
afterAll(async () => {
  upstream?.release();
  await second?.stop();
  await stack?.stop();
  await upstream?.close();
});

describe.runIf(isEmbedded)('a second process booting on shared tables', () => {
  it("leaves the first process's call in flight alone: its result is recorded as succeeded, not outcome_unknown", async () => {
    const { api, keys } = stack;
    await api.until(
      'the upstream tool to be registered',
      async () => (await api.request('GET', '/v1/tools?format=neutral', { key: keys.agent })).body.tools as { name: string }[],
      (tools) => tools.some((t) => t.name === 'held__create'),
    );
    const runId = await api.createRun(keys.agent);
    const submitted = await api.call(keys.agent, runId, { callId: 'call_held', name: 'held__create', arguments: { title: 'x' } }, 0);
    expect(submitted.status).toBe(202);
    const operationId = submitted.body.operationId as string;
    await api.until(
      'the call to reach the upstream',
      async () => ({ calls: upstream.calls(), op: await api.operation(keys.agent, operationId) }),
      (seen) => seen.calls === 1 && seen.op.state === 'executing',
    );

    // The second process boots (its sweep runs before it answers) while the first one's attempt is in flight.
    second = await stack.anotherProcess!();
    const afterBoot = await api.operation(keys.agent, operationId);
    expect(afterBoot, JSON.stringify(afterBoot)).toMatchObject({ state: 'executing', attempts: 1 });

    upstream.release();
    const done = await api.until(
      'the operation to be reported',
      () => api.operation(keys.agent, operationId),
      (op) => op.state === 'reported',
      60_000,
    );
    expect(done.envelope).toMatchObject({ status: 'succeeded', result: { id: 'thing_1' } });
    expect(upstream.calls()).toBe(1);
    expect(shape(await api.trace(keys.agent, runId), operationId)).toEqual([
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
  }, 240_000);
});
