import { AGENT_RUN_MAX_IDENTICAL_CALLS } from '../core/budgets';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  McpError,
  isInitializeRequest,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { authenticateBearer, bearerChallenge, bearerKeyOf } from '../http/authenticate';
import { bodySizeLimit } from '../http/body-limit';
import { MAX_BODY_BYTES } from '../http/schemas';
import { createClient, ToolRunnerError, type ToolRunnerClient } from '../client';
import { operationIdFor } from '../core/ids';
import { DEFAULT_MCP_RUN_IDLE_MINUTES } from '../core/config';
import { JSON_BOUNDS, parseBoundedJson } from '../core/json-bounds';
import type { ConfigSource, McpRunStore } from '../core/ports';
import type { ToolRegistry } from '../core/tool-spec';
import { checkRequestOrigin, listensOnLoopback } from '../http/request-origin';
import { modernMcp } from './modern';
import { issueSessionId, verifySessionId } from './session-id';
import { operationTaskStore, submitAsTask } from './tasks';
import { CHECK_OPERATION, callTool, derivedCallId, type CallTarget, type SessionContext, withProtocolErrors } from './tool-calls';
import { defaultLog } from '../core/log';

export interface McpOptions {
  /** The runner's own API, called in-process with the caller's bearer key. */
  api: (request: Request) => Response | Promise<Response>;
  /** The configuration: principals, the secret session ids are signed with, `mcpAllowedOrigins`. */
  config: ConfigSource;
  /** The API's public URL, read per request (the embedded stack learns its port after building the app). */
  publicBaseUrl: () => string;
  /** The registered tools (what a tool asks of 2026-07-28 clients). */
  tools: ToolRegistry;
  /** Where each principal's current MCP run is recorded (2026-07-28 requests that name no run join it). */
  runs: McpRunStore;
  /** How long a `tools/call` waits for its envelope before answering "pending" (default 25 s). */
  waitMs?: number;
  /** The API's waiting slots, which the wait after a submission holds (absent: unbounded, as the API's are). */
  idleWait?: CallTarget['idleWait'];
  now?: () => number;
}

const RUN_HEADER = 'toolrunner-run-id';
const SESSION_HEADER = 'mcp-session-id';

/** `TOOLRUNNER_MCP_WAIT_MS` shortens the wait (tests, clients with short timeouts); default 25 s. */
export function mcpWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  return z.coerce.number().int().min(0).max(25_000).default(25_000).parse(env.TOOLRUNNER_MCP_WAIT_MS);
}

/**
 * `/mcp`: an MCP server over Streamable HTTP, one session per run. It sits on the runner's HTTP API, not on
 * its internals, so it behaves exactly as the API does for the same key.
 *
 * No session lives in this process: the `Mcp-Session-Id` is a signed reference to the session's run and
 * principal (mcp/session-id.ts), and every request is served by a fresh, stateless SDK server and transport
 * for the session that id names. So behind API Gateway + Lambda, where consecutive requests of one session
 * reach different processes, and after a restart, every process serves every session. Answers are plain
 * JSON, never a stream that would have to outlive the request (a Lambda invocation).
 */
export function mcpRoutes(options: McpOptions): Hono {
  const waitMs = options.waitMs ?? 25_000;
  const now = options.now ?? Date.now;
  const inFlight = new InFlightCalls();
  const modern = modernMcp();
  const app = new Hono();
  app.onError((error, c) => {
    defaultLog().error('unhandled MCP error', { error: error.name, detail: error.message });
    return jsonRpcError(c, 500, 'internal', 'internal error');
  });
  // The API's own limit, answered as JSON-RPC: nothing an MCP client sends needs more.
  app.use(
    '/mcp',
    bodySizeLimit(MAX_BODY_BYTES, (c) => jsonRpcError(c, 413, 'payload_too_large', 'the body is over 256 KiB')),
  );

  app.all('/mcp', async (c) => {
    const config = await options.config();
    const publicBaseUrl = options.publicBaseUrl();
    const origin = checkRequestOrigin(
      {
        url: c.req.url,
        host: c.req.header('host') ?? null,
        origin: c.req.header('origin') ?? null,
        forwardedProto: c.req.header('x-forwarded-proto') ?? null,
      },
      { publicBaseUrl, allowedOrigins: config.mcpAllowedOrigins ?? [], onLoopback: listensOnLoopback(c.env, publicBaseUrl) },
    );
    if (!origin.ok) return jsonRpcError(c, 403, 'forbidden', origin.reason);

    const key = bearerKeyOf(c.req.header('authorization'));
    const principal = key ? (await authenticateBearer(config, key, publicBaseUrl))?.principal : undefined;
    if (!key || !principal)
      return jsonRpcError(c, 401, 'unauthenticated', 'a valid bearer key or access token is required', {
        'WWW-Authenticate': bearerChallenge(config, publicBaseUrl, '/mcp', key !== undefined),
      });
    // Nothing is ever pushed to a client unasked, and a stream cannot outlive a Lambda invocation; ending a
    // session would need state the server does not keep (the run lives on; a client simply stops using the id).
    if (c.req.method !== 'POST')
      return jsonRpcError(c, 405, 'method_not_allowed', 'this MCP server answers POST only (no server-sent stream, no session end)', {
        Allow: 'POST',
      });
    // The API's bounds on what a body may hold (nesting, `__proto__`, numbers JSON cannot carry), one level
    // deeper since MCP's arguments sit one level deeper: refused here, as on /v1, never dropped or coerced.
    const parsed = parseBoundedJson(await c.req.text(), [], JSON_BOUNDS.maxDepth + 1);
    if (!parsed.ok)
      return parsed.reason === 'syntax'
        ? jsonRpcError(c, 400, 'invalid_request', 'the body is not JSON', {}, -32700)
        : jsonRpcError(c, 400, 'invalid_request', parsed.message, {}, -32602);
    const body = parsed.value;

    const client = createClient({
      baseUrl: 'http://runner.internal',
      apiKey: key,
      fetch: (url, init) => options.api(new Request(url, init)),
    });
    // Revision 2026-07-28 (the request carries its own `_meta` envelope): no session, served by the SDK's handler.
    if (!(await isLegacyRequest(c.req.raw, body)))
      return modern.serve(c.req.raw, body, {
        client,
        principalId: principal.id,
        runHeader: c.req.header(RUN_HEADER),
        waitMs,
        idleWait: options.idleWait,
        runs: options.runs,
        tools: options.tools,
        idleMinutes: config.mcpRunIdleMinutes ?? DEFAULT_MCP_RUN_IDLE_MINUTES,
        now,
      });
    const sessionId = c.req.header(SESSION_HEADER);
    if (!sessionId) {
      if (!isInitializeRequest(body)) return jsonRpcError(c, 400, 'invalid_request', 'the first request of a session must be initialize');
      let runId: string;
      try {
        runId = await runForSession(client, c.req.header(RUN_HEADER));
      } catch (error) {
        if (error instanceof ToolRunnerError) return jsonRpcError(c, error.status, error.code, error.message);
        throw error;
      }
      const session = {
        sessionId: issueSessionId(config.approvalSecret, { runId, principalId: principal.id }, now()),
        runId,
        client,
        waitMs,
        idleWait: options.idleWait,
      };
      const response = await serve(session, inFlight, c.req.raw, body);
      // The run is named in the answer so a client can join it again from another session.
      response.headers.set('Toolrunner-Run-Id', runId);
      return response;
    }

    const claims = verifySessionId(config.approvalSecret, sessionId);
    // What this deployment did not sign is no session of it: 404 tells the client to initialize a new one.
    if (!claims) return jsonRpcError(c, 404, 'not_found', 'no such MCP session; initialize a new one');
    // A session belongs to the principal that opened it; another principal's key never reaches its run.
    if (claims.principalId !== principal.id) return jsonRpcError(c, 403, 'forbidden', 'this MCP session belongs to another principal');
    if (isInitializeRequest(body)) return jsonRpcError(c, 400, 'invalid_request', 'this session is already initialized');
    const session = { sessionId, runId: claims.runId, client, waitMs, idleWait: options.idleWait };
    // Before answering (202): on Lambda nothing runs after the answer, and the call may be in another process.
    await Promise.all(cancelledRequestIds(body).map((requestId) => cancelCall(session, inFlight, requestId)));
    return serve(session, inFlight, c.req.raw, body);
  });
  return app;
}

/** A fresh SDK server and stateless transport answer this one request for the session; both end with it. */
async function serve(session: SessionContext, inFlight: InFlightCalls, request: Request, body: unknown): Promise<Response> {
  const server = makeServer(session, inFlight);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(request, { parsedBody: body });
    response.headers.set('Mcp-Session-Id', session.sessionId);
    return response;
  } finally {
    await server.close();
  }
}

/** A new run with default budgets (and the loop fuse), or the open run the client names (the API checks it is the caller's). */
async function runForSession(client: ToolRunnerClient, requested: string | undefined): Promise<string> {
  // A model looping on one call is the MCP client's problem to notice; the fuse stops it at the sixth.
  if (!requested)
    return (await client.createRun({ budgets: { maxIdenticalCalls: AGENT_RUN_MAX_IDENTICAL_CALLS }, metadata: { via: 'mcp' } })).runId;
  const run = await client.getRun(requested);
  if (run.status !== 'open') throw new ToolRunnerError(409, 'run_closed', `run ${requested} is ${run.status}`);
  return run.runId;
}

function makeServer(session: SessionContext, inFlight: InFlightCalls): Server {
  const { client, runId } = session;
  const server = new Server(
    { name: 'toolrunner', version: '0.1.0' },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      instructions: `Every tool call runs in toolrunner run ${runId}.`,
      taskStore: operationTaskStore(client, runId),
    },
  );
  // Tools may run as tasks (the operation is the task); clients without tasks get the pending answer instead.
  server.setRequestHandler(ListToolsRequestSchema, async () =>
    legacyErrors(async () => ({
      tools: [
        ...((await client.listTools('mcp')) as Tool[]).map((tool) => ({ ...tool, execution: { taskSupport: 'optional' as const } })),
        CHECK_OPERATION,
      ],
    })),
  );
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    legacyErrors(async () => {
      if (request.params.task && request.params.name !== CHECK_OPERATION.name) return submitAsTask(session, request.params, extra);
      const local = inFlight.start(session.sessionId, extra.requestId);
      try {
        return await callTool(session, request.params, {
          requestId: extra.requestId,
          signal: AbortSignal.any([extra.signal, local.signal]),
        });
      } finally {
        inFlight.end(session.sessionId, extra.requestId, local);
      }
    }),
  );
  answerClientMistakesAsInvalidParams(server);
  return server;
}

type RequestHandler = (request: unknown, extra: unknown) => Promise<unknown>;

/**
 * The 1.x SDK parses a request's params against its schema before any handler of ours runs, and answers a
 * failed parse (and any error without a numeric code, such as the task handlers' own) with -32603. Every
 * registered handler, ours and the SDK's (ping, tasks/*), is wrapped so that a client's mistake is -32602.
 * The map is the SDK's own (`Protocol._requestHandlers`): a test of every wrapped method fails if it moves.
 */
function answerClientMistakesAsInvalidParams(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: Map<string, RequestHandler> })._requestHandlers;
  if (!(handlers instanceof Map)) throw new Error('the MCP SDK no longer keeps its request handlers in _requestHandlers');
  for (const [method, handler] of handlers) handlers.set(method, (request, extra) => legacyErrors(() => handler(request, extra)));
}

/** Errors at 2025-11-25: the 1.x SDK's. */
function legacyErrors<T>(work: () => Promise<T>): Promise<T> {
  return withProtocolErrors(
    work,
    (code, message) => new McpError(code, message),
    (error) => error instanceof McpError,
  );
}

/** The request ids a body's `notifications/cancelled` messages name. */
function cancelledRequestIds(body: unknown): (string | number)[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((message) => {
    const parsed = CancelledNotificationSchema.safeParse(message);
    return parsed.success && parsed.data.params.requestId !== undefined ? [parsed.data.params.requestId] : [];
  });
}

/**
 * `notifications/cancelled` for a `tools/call`: exactly `POST /v1/operations/{id}/cancel`. Where the call
 * waits in this very process it is aborted there (it cancels its own operation, whatever its callId);
 * otherwise the operation is found from the session and the request id (the derived callId). A call that
 * named its own callId in `_meta` is found this way only in the process that serves it.
 */
async function cancelCall(session: SessionContext, inFlight: InFlightCalls, requestId: string | number): Promise<void> {
  if (inFlight.abort(session.sessionId, requestId)) return;
  const operationId = operationIdFor(session.runId, derivedCallId(session.sessionId, requestId));
  try {
    await session.client.cancelOperation(operationId);
  } catch (error) {
    // No such call (another kind of request, or one that never reached the runner) or already finished.
    if (!(error instanceof ToolRunnerError) || ![404, 409].includes(error.status)) throw error;
  }
}

/**
 * The `tools/call` requests this process is answering right now, by session and request id: not session
 * state (it ends with each request), only the shortcut that lets a cancellation reach a call in the same process.
 */
class InFlightCalls {
  private readonly calls = new Map<string, AbortController>();
  private static key(sessionId: string, requestId: string | number): string {
    return `${sessionId}\n${JSON.stringify(requestId)}`;
  }
  start(sessionId: string, requestId: string | number): AbortController {
    const controller = new AbortController();
    this.calls.set(InFlightCalls.key(sessionId, requestId), controller);
    return controller;
  }
  end(sessionId: string, requestId: string | number, controller: AbortController): void {
    const key = InFlightCalls.key(sessionId, requestId);
    if (this.calls.get(key) === controller) this.calls.delete(key);
  }
  /** Aborts the call if it waits here; false if it does not. */
  abort(sessionId: string, requestId: string | number): boolean {
    const controller = this.calls.get(InFlightCalls.key(sessionId, requestId));
    controller?.abort('cancelled by the client');
    return controller !== undefined;
  }
}

/** Errors outside a JSON-RPC exchange, in JSON-RPC form (what MCP clients read) with the API's code. */
function jsonRpcError(
  c: Context,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
  rpcCode = -32000,
): Response {
  return c.json(
    { jsonrpc: '2.0', id: null, error: { code: rpcCode, message: `${code}: ${message}`, data: { code } } },
    status as ContentfulStatusCode,
    headers,
  );
}
