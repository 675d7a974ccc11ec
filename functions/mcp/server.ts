import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { createClient, ToolRunnerError, type ToolRunnerClient } from '../client';
import { MAX_BODY_BYTES } from '../api/schemas';
import { operationTaskStore, submitAsTask } from './tasks';
import { callTool, CHECK_OPERATION } from './tool-calls';

export interface McpOptions {
  /** The runner's own API, called in-process with the caller's bearer key. */
  api: (request: Request) => Response | Promise<Response>;
  /** How long a `tools/call` waits for its envelope before answering "pending" (default 25 s). */
  waitMs?: number;
  /** Sessions idle this long are closed (default one hour). */
  idleMs?: number;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  keyDigest: Buffer;
  lastSeen: number;
}

const RUN_HEADER = 'toolrunner-run-id';

/** `TOOLRUNNER_MCP_WAIT_MS` shortens the wait (tests, clients with short timeouts); default 25 s. */
export function mcpWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  return z.coerce.number().int().min(0).max(25_000).default(25_000).parse(env.TOOLRUNNER_MCP_WAIT_MS);
}
const digest = (key: string) => createHash('sha256').update(key).digest();

/**
 * `/mcp`: an MCP server over Streamable HTTP, one session per run. It sits on the runner's HTTP API,
 * not on its internals, so it behaves exactly as the API does for the same key.
 * Sessions live in this process's memory: a deployment serving `/mcp` needs sticky routing per session.
 */
export function mcpRoutes(options: McpOptions): Hono {
  const sessions = new Map<string, Session>();
  const waitMs = options.waitMs ?? 25_000;
  const idleMs = options.idleMs ?? 3600_000;
  const app = new Hono();
  // The API's own limit, answered as JSON-RPC: nothing an MCP client sends needs more.
  app.use(
    '/mcp',
    bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => jsonRpcError(c, 413, 'payload_too_large', 'the body is over 256 KiB') }),
  );

  app.all('/mcp', async (c) => {
    const key = (c.req.header('authorization') ?? '').match(/^Bearer\s+(\S+)$/i)?.[1];
    if (!key) return jsonRpcError(c, 401, 'unauthenticated', 'a valid bearer key is required', { 'WWW-Authenticate': 'Bearer' });
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId) {
      const session = sessions.get(sessionId);
      if (!session) return jsonRpcError(c, 404, 'not_found', 'no such MCP session; initialize a new one');
      // A session belongs to the key that opened it; another key never reaches its run.
      if (!timingSafeEqual(session.keyDigest, digest(key)))
        return jsonRpcError(c, 403, 'forbidden', 'this MCP session belongs to another key');
      session.lastSeen = Date.now();
      return session.transport.handleRequest(c.req.raw);
    }
    if (c.req.method !== 'POST') return jsonRpcError(c, 400, 'invalid_request', 'an Mcp-Session-Id header is required');
    const body = await c.req.json().catch(() => undefined);
    if (!isInitializeRequest(body)) return jsonRpcError(c, 400, 'invalid_request', 'the first request of a session must be initialize');

    closeIdle(sessions, idleMs);
    const client = createClient({
      baseUrl: 'http://runner.internal',
      apiKey: key,
      fetch: (url, init) => options.api(new Request(url, init)),
    });
    let runId: string;
    let turnsSoFar: number;
    try {
      ({ runId, turnsSoFar } = await runForSession(client, c.req.header(RUN_HEADER)));
    } catch (error) {
      if (error instanceof ToolRunnerError) return jsonRpcError(c, error.status, error.code, error.message);
      throw error;
    }
    let turn = turnsSoFar;
    const server = makeServer(client, { runId, waitMs, nextTurn: () => ++turn });
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Plain JSON answers pass through any proxy or API gateway; nothing here streams progress.
      enableJsonResponse: true,
      onsessioninitialized: (id) => void sessions.set(id, { transport, keyDigest: digest(key), lastSeen: Date.now() }),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw, { parsedBody: body });
    // The run is named in the answer so a client can join it again from another session.
    response.headers.set('Toolrunner-Run-Id', runId);
    return response;
  });
  return app;
}

/** A new run with default budgets, or the open run the client names (the API checks it is the caller's). */
async function runForSession(client: ToolRunnerClient, requested: string | undefined): Promise<{ runId: string; turnsSoFar: number }> {
  if (!requested) {
    const run = await client.createRun({ metadata: { via: 'mcp' } });
    return { runId: run.runId, turnsSoFar: 0 };
  }
  const run = await client.getRun(requested);
  if (run.status !== 'open') throw new ToolRunnerError(409, 'run_closed', `run ${requested} is ${run.status}`);
  return { runId: run.runId, turnsSoFar: run.usage.turns };
}

function makeServer(client: ToolRunnerClient, session: { runId: string; waitMs: number; nextTurn(): number }): Server {
  const server = new Server(
    { name: 'toolrunner', version: '0.1.0' },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      instructions: `Every tool call runs in toolrunner run ${session.runId}.`,
      taskStore: operationTaskStore(client, session.runId),
    },
  );
  // Tools may run as tasks (the operation is the task); clients without tasks get the pending answer instead.
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      ...((await client.listTools('mcp')) as Tool[]).map((tool) => ({ ...tool, execution: { taskSupport: 'optional' as const } })),
      CHECK_OPERATION,
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    request.params.task && request.params.name !== CHECK_OPERATION.name
      ? submitAsTask({ ...session, client }, request.params, extra)
      : callTool({ ...session, client }, request.params, extra),
  );
  return server;
}

function closeIdle(sessions: Map<string, Session>, idleMs: number): void {
  const cutoff = Date.now() - idleMs;
  for (const [id, session] of sessions) {
    if (session.lastSeen < cutoff) {
      sessions.delete(id);
      void session.transport.close();
    }
  }
}

/** Errors before a session exists, in JSON-RPC form (what MCP clients read) with the API's code. */
function jsonRpcError(c: Context, status: number, code: string, message: string, headers: Record<string, string> = {}) {
  return c.json(
    { jsonrpc: '2.0', id: null, error: { code: -32000, message: `${code}: ${message}`, data: { code } } },
    status as ContentfulStatusCode,
    headers,
  );
}
