import {
  type CallToolResult,
  createMcpHandler,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { type Operation, type Run, ToolRunnerError, type ToolRunnerClient } from '../client';
import { AGENT_RUN_MAX_IDENTICAL_CALLS } from '../core/budgets';
import { canonicalJson, sha256 } from '../core/canonical';
import type { McpRunStore } from '../core/ports';
import { type ToolRegistry, toolsReady } from '../core/tool-spec';
import { MAX_BODY_BYTES } from '../http/schemas';
import {
  CHECK_OPERATION,
  CHECK_OPERATION_TOOL,
  type CallTarget,
  callMetaOf,
  checkOperation,
  envelopeResult,
  InvalidParamsError,
  pendingResult,
  runCall,
  withProtocolErrors,
} from './tool-calls';

/**
 * `/mcp` at protocol revision 2026-07-28: no handshake and no session; every request names its revision and
 * the client's capabilities in `_meta`. The SDK's per-request handler checks that envelope, the `Mcp-Method`
 * and `Mcp-Name` headers and the version, answers `server/discover` and adds the caching hints; this module
 * supplies, per request, a server that maps tools and tasks onto the runner's API as the caller.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const START_RUN_TOOL = 'toolrunner_start_run';
/** How often a task's client should look again: a person deciding takes minutes, not milliseconds. */
const TASK_POLL_INTERVAL_MS = 5_000;
const RUN_META = 'toolrunner/runId';
const NEVER_ABORTED = new AbortController().signal;

const START_RUN: Tool = {
  name: START_RUN_TOOL,
  description:
    'Start a new toolrunner run for the calls that follow (new budgets, a fresh loop fuse); the previous run stays as it was. Returns the new runId.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
};

/** What serving one 2026-07-28 request needs; nothing of it outlives the request. */
export interface ModernRequest {
  client: ToolRunnerClient;
  principalId: string;
  /** The `Toolrunner-Run-Id` header, which wins over `_meta`. */
  runHeader: string | undefined;
  waitMs: number;
  /** The API's waiting slots, which the wait after a submission holds. */
  idleWait?: CallTarget['idleWait'];
  /** The registered tools, for what a tool asks of MCP clients (`mcpClientCapabilities`). */
  tools: ToolRegistry;
  /** Where the principal's current MCP run is recorded. */
  runs: McpRunStore;
  /** Minutes without calls after which the current MCP run is replaced. */
  idleMinutes: number;
  now: () => number;
}

/** What finding (or replacing) a principal's current MCP run needs. */
export type CurrentRunContext = Pick<ModernRequest, 'principalId' | 'runs' | 'idleMinutes' | 'now'> & {
  client: Pick<ToolRunnerClient, 'createRun' | 'getRun'>;
};

/**
 * One handler for the process (the SDK's, strict: 2025-era traffic never reaches it), serving each request
 * with the context `serve` registered for it.
 */
export function modernMcp(): { serve(request: Request, body: unknown, context: ModernRequest): Promise<Response> } {
  const contexts = new WeakMap<Request, ModernRequest>();
  const handler = createMcpHandler(
    ({ requestInfo }) => {
      const context = requestInfo && contexts.get(requestInfo);
      if (!context) throw new Error('an MCP request without its context');
      return makeServer(context);
    },
    // 'auto' answers plain JSON: nothing here sends a message before its result, so no stream has to outlive
    // the request (a Lambda invocation).
    { legacy: 'reject', responseMode: 'auto', maxRequestBodySize: MAX_BODY_BYTES },
  );
  return {
    async serve(request, body, context) {
      contexts.set(request, context);
      return handler.fetch(request, { parsedBody: body });
    },
  };
}

function makeServer(context: ModernRequest): Server {
  const server = new Server(
    { name: 'toolrunner', version: '0.1.0' },
    {
      capabilities: { tools: {}, prompts: {}, resources: {}, extensions: { [TASKS_EXTENSION]: {} } },
      instructions: 'Every tool call runs in a toolrunner run; each reply names it in _meta["toolrunner/runId"].',
      // The list depends on the caller's roles and on the configuration, which may change at any time.
      cacheHints: {
        'tools/list': { ttlMs: 0, cacheScope: 'private' },
        'prompts/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: 60_000, cacheScope: 'public' },
      },
    },
  );
  server.setRequestHandler('tools/list', async (_request, ctx) =>
    asProtocolErrors(async () => {
      const { runId } = await runOf(context, ctx);
      const tools = (await context.client.listTools('mcp')) as Tool[];
      return { tools: [...tools, CHECK_OPERATION as Tool, START_RUN], _meta: { [RUN_META]: runId } };
    }),
  );
  // The runner has no prompts or resources; the lists answer, empty, so clients need not special-case it.
  server.setRequestHandler('prompts/list', async () => ({ prompts: [] }));
  server.setRequestHandler('resources/list', async () => ({ resources: [] }));
  server.setRequestHandler('resources/templates/list', async () => ({ resourceTemplates: [] }));
  server.setRequestHandler('tools/call', async (request, ctx) =>
    asProtocolErrors(() => callTool(context, request.params, ctx) as Promise<CallToolResult>),
  );
  const TaskParams = { params: z.looseObject({ taskId: z.string().min(1).max(200) }) };
  server.setRequestHandler('tasks/get', TaskParams, async (params, ctx) =>
    asProtocolErrors(async () => {
      requireTasks(ctx);
      return detailedTask(await taskOperation(context.client, params.taskId));
    }),
  );
  server.setRequestHandler('tasks/cancel', TaskParams, async (params, ctx) =>
    asProtocolErrors(async () => {
      requireTasks(ctx);
      const op = await taskOperation(context.client, params.taskId);
      // Cancelling a finished task changes nothing and is no error: the next tasks/get shows how it ended.
      if (!op.envelope) await context.client.cancelOperation(op.operationId).catch(ignoreFinished);
      return {};
    }),
  );
  server.setRequestHandler('tasks/update', TaskParams, async (params, ctx) =>
    asProtocolErrors(async () => {
      requireTasks(ctx);
      await taskOperation(context.client, params.taskId);
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'this task takes no input: a person decides its approval on the approval page',
      );
    }),
  );
  return server;
}

async function callTool(
  context: ModernRequest,
  params: { name: string; arguments?: Record<string, unknown> },
  ctx: ServerContext,
): Promise<CallToolResult | Record<string, unknown>> {
  const meta = ctx.mcpReq._meta ?? {};
  const callMeta = callMetaOf(meta);
  if (params.name === START_RUN_TOOL) {
    const runId = await startRun(context);
    return { content: [{ type: 'text', text: JSON.stringify({ runId }) }], structuredContent: { runId }, _meta: { [RUN_META]: runId } };
  }
  // A registry described by Tools is filled on first use.
  await toolsReady(context.tools);
  const missing = missingCapabilities(context.tools.get(params.name)?.mcpClientCapabilities, ctx);
  if (missing) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: missing });
  const run = await runOf(context, ctx);
  const { runId } = run;
  if (params.name === CHECK_OPERATION_TOOL)
    return { ...(await checkOperation(context.client, params.arguments)), _meta: { [RUN_META]: runId } };
  const args = params.arguments ?? {};
  const call = {
    callId: callMeta['toolrunner/callId'] ?? derivedCallId(runId, params.name, args),
    turn: callMeta['toolrunner/turn'] ?? run.usage.turns + 1,
    name: params.name,
    arguments: args,
  };
  const traceparent = typeof meta.traceparent === 'string' ? meta.traceparent : undefined;
  // A broken stream is no cancellation at this revision: the client re-issues the request and gets this operation.
  const outcome = await runCall({ runId, client: context.client, waitMs: context.waitMs, idleWait: context.idleWait }, call, {
    signal: NEVER_ABORTED,
    traceparent,
  });
  if (outcome.kind === 'result') return { ...outcome.result, _meta: { [RUN_META]: runId } };
  // Waiting for a person, or running past the wait: a task for clients that take tasks, else the pending answer.
  if (!declaresTasks(ctx)) return { ...pendingResult(outcome.op), _meta: { [RUN_META]: runId } };
  const op = await context.client.getOperation(outcome.op.operationId);
  return { resultType: 'task', ...taskFields(op), _meta: { [RUN_META]: runId } };
}

/**
 * The callId of a 2026-07-28 `tools/call` without `_meta["toolrunner/callId"]`: derived from the run, the tool
 * and the arguments, never from the JSON-RPC id. A client whose response stream broke re-issues the request
 * with a new id; it is the same operation (a replay), never a second effect. The same call made again on
 * purpose is a replay too: a client that means a new call names its own callId or starts a new run.
 */
export function derivedCallId(runId: string, toolName: string, args: Record<string, unknown>): string {
  return `mcp_${sha256(`${runId}\n${toolName}\n${canonicalJson(args)}`).slice('sha256:'.length, 'sha256:'.length + 32)}`;
}

/** The run a request belongs to: the header, else `_meta["toolrunner/runId"]`, else the principal's current MCP run. */
async function runOf(context: ModernRequest, ctx: ServerContext): Promise<Run> {
  const named = context.runHeader ?? stringMeta(ctx, RUN_META);
  if (named) {
    const run = await context.client.getRun(named);
    if (run.status !== 'open') throw new ProtocolError(ProtocolErrorCode.InvalidParams, `run ${named} is ${run.status}`);
    return run;
  }
  return currentRun(context, false);
}

/** `toolrunner_start_run`: a new run becomes the principal's current one. */
async function startRun(context: ModernRequest): Promise<string> {
  return (await currentRun(context, true)).runId;
}

/**
 * The principal's current MCP run, replaced when it is closed, out of budget or deadline, idle for
 * `idleMinutes`, or when `fresh`. Racing requests agree: the new run is created with an Idempotency-Key that
 * names the run it replaces (the same run for all of them), and the record moves by a conditional write.
 */
export async function currentRun(context: CurrentRunContext, fresh: boolean): Promise<Run> {
  for (let tries = 0; tries < 5; tries++) {
    const current = await context.runs.currentMcpRun(context.principalId);
    const still = current && !fresh ? await stillCurrent(context, current) : undefined;
    if (still) return still;
    const next = await context.client.createRun(
      { budgets: { maxIdenticalCalls: AGENT_RUN_MAX_IDENTICAL_CALLS }, metadata: { via: 'mcp' } },
      { idempotencyKey: `mcp-current-run-after:${current ?? 'none'}` },
    );
    if (next.runId === current) return next;
    if (await context.runs.replaceCurrentMcpRun(context.principalId, current, next.runId)) return next;
    // Another request moved the record first; what it recorded is current now (unless it is stale already).
    fresh = false;
  }
  throw new ProtocolError(ProtocolErrorCode.InternalError, 'the current MCP run kept changing; try again');
}

/** The run, read once for the caller too (its turn count), while it is open and not idle; else undefined. */
async function stillCurrent(context: CurrentRunContext, runId: string): Promise<Run | undefined> {
  try {
    const run = await context.client.getRun(runId);
    return run.status === 'open' && context.now() - Date.parse(run.updatedAt) < context.idleMinutes * 60_000 ? run : undefined;
  } catch (error) {
    // Deleted by retention: replaced like a closed one.
    if (error instanceof ToolRunnerError && error.status === 404) return undefined;
    throw error;
  }
}

/** A string `_meta` key the runner reads: absent, or a non-empty string; anything else is refused, never ignored. */
function stringMeta(ctx: ServerContext, key: string): string | undefined {
  const value = ctx.mcpReq._meta?.[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new InvalidParamsError(`_meta["${key}"]: expected a non-empty string`);
  return value;
}

function clientCapabilities(ctx: ServerContext): { extensions?: Record<string, unknown> } {
  const envelope = ctx.mcpReq.envelope as Record<string, { extensions?: Record<string, unknown> } | undefined> | undefined;
  return envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {};
}

function declaresTasks(ctx: ServerContext): boolean {
  return Boolean(clientCapabilities(ctx).extensions?.[TASKS_EXTENSION]);
}

/** The capabilities a tool needs that the request's client did not declare, or undefined when none is missing. */
function missingCapabilities(
  needed: Record<string, Record<string, unknown>> | undefined,
  ctx: ServerContext,
): Record<string, object> | undefined {
  if (!needed) return undefined;
  const declared = clientCapabilities(ctx) as Record<string, unknown>;
  const missing = Object.fromEntries(Object.entries(needed).filter(([name]) => declared[name] === undefined));
  return Object.keys(missing).length > 0 ? missing : undefined;
}

function requireTasks(ctx: ServerContext): void {
  if (!declaresTasks(ctx))
    throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
}

/** The task's status: the operation's envelope decides; until there is one it is working (a person may be deciding). */
function taskStatus(op: Operation): 'working' | 'completed' | 'cancelled' {
  if (!op.envelope) return 'working';
  return op.envelope.status === 'cancelled' ? 'cancelled' : 'completed';
}

function taskFields(op: Operation) {
  const at = op.updatedAt ?? new Date().toISOString();
  return {
    taskId: op.operationId,
    status: taskStatus(op),
    statusMessage:
      op.envelope?.message ?? (op.state === 'awaiting_approval' ? 'waiting for a person to approve it' : `the operation is ${op.state}`),
    createdAt: op.createdAt ?? at,
    lastUpdatedAt: at,
    // Operations are kept for the deployment's retention, never expired early by the runner.
    ttlMs: null,
    pollIntervalMs: TASK_POLL_INTERVAL_MS,
  };
}

/** `tasks/get`: the task, with the tool's result inlined once it completed (a tool's failure is `isError`). */
function detailedTask(op: Operation): Record<string, unknown> {
  const task = taskFields(op);
  return task.status === 'completed' && op.envelope ? { ...task, result: envelopeResult(op.envelope) } : task;
}

async function taskOperation(client: ToolRunnerClient, taskId: string): Promise<Operation> {
  try {
    return await client.getOperation(taskId);
  } catch (error) {
    // Another principal's operation is as unknown as one that does not exist.
    if (error instanceof ToolRunnerError && [400, 403, 404].includes(error.status))
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no such task: ${taskId}`);
    throw error;
  }
}

function ignoreFinished(error: unknown): void {
  if (!(error instanceof ToolRunnerError) || ![404, 409].includes(error.status)) throw error;
}

/** Errors at 2026-07-28: the v2 SDK's. */
function asProtocolErrors<T>(work: () => Promise<T>): Promise<T> {
  return withProtocolErrors(
    work,
    (code, message) => new ProtocolError(code, message),
    (error) => error instanceof ProtocolError,
  );
}
