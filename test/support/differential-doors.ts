import { RunContext } from '@openai/agents';
import { z } from 'zod';
import { compilePolicies } from '../../functions/adapters/cedar-policies';
import { toolrunnerAiSdk } from '../../functions/agents/ai-sdk';
import { toolrunnerAgents } from '../../functions/agents/openai-agents';
import { makeApp } from '../../functions/api/app';
import { ToolRunnerError } from '../../functions/client';
import type { RunnerConfig } from '../../functions/core/config';
import { nextStep } from '../../functions/core/next-step';
import type { OperationRecord } from '../../functions/core/model';
import type { Deps, LifecyclePort } from '../../functions/core/ports';
import { makeRegistry, type ToolRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { lambdaToolHost } from '../../functions/adapters/tool-function';
import { lambdaToolDirectory } from '../../functions/adapters/tools-directory';
import { describedRegistry } from '../../functions/tools/described-tools';
import { answerToolsEvent } from '../../functions/tools/tools-answer';
import { mcpRoutes } from '../../functions/mcp/server';
import { expireApprovalStep, requestApproval } from '../../functions/steps/approval';
import { executeAttempt } from '../../functions/steps/execute';
import { reconcileOutcome } from '../../functions/steps/reconcile';
import { reportEnvelope } from '../../functions/steps/report';
import { routeByRecord } from '../../functions/steps/route';
import { memoryStore } from './memory-store';

/**
 * Every door a tool call can come through, in one process over the in-memory store: the HTTP API (submit and
 * preview, by key or token), `/mcp` at 2025-11-25 and 2026-07-28, the two framework adapters (their approval
 * question and their `execute`), the lifecycle's steps (the re-check before an attempt) and the approval link.
 * Each door's answer is reduced to one comparable decision.
 */

export const BASE_URL = 'http://runner.test';
export const SECRET = 'differential-secret-0123456789';

/** One door's answer, reduced: ran, waits for a person, refused with an envelope code, or refused as a request. */
export type DoorDecision =
  | { kind: 'allow' }
  | { kind: 'approval' }
  | { kind: 'deny'; code: string }
  /** A request-level refusal (HTTP 4xx, JSON-RPC -32602): nothing was created. */
  | { kind: 'refused'; code: string }
  /** An adapter that does not offer the tool at all (the principal may not call it): the model cannot call it. */
  | { kind: 'hidden' }
  /** Anything else (HTTP 5xx, -32603, an exception): never a right answer. */
  | { kind: 'error'; detail: string };

export const decisionText = (d: DoorDecision): string =>
  d.kind === 'deny' || d.kind === 'refused' ? `${d.kind}:${d.code}` : d.kind === 'error' ? `error(${d.detail.slice(0, 160)})` : d.kind;

/** What a tool received, by idempotency key (every attempt of one operation shares it). */
export interface Execution {
  tool: string;
  input: unknown;
  idempotencyKey: string;
}

/**
 * The tools the cases call: a replay-safe write (its first attempt is sent from the submission), a write that is
 * not (every attempt is re-checked first), a strict read, and a write whose own rule asks a person above 500.
 */
export function differentialTools(executions: Execution[]): ToolSpec[] {
  const run = (tool: string) => async (ctx: { idempotencyKey: string }, input: unknown) => {
    executions.push({ tool, input, idempotencyKey: ctx.idempotencyKey });
    return { ok: true };
  };
  const base = { outputSchema: z.object({ ok: z.boolean() }), timeoutMs: 1000, maxAttempts: 1 } as const;
  return [
    {
      ...base,
      name: 'pay',
      description: 'a keyed charge',
      inputSchema: z.object({
        amount: z.number(),
        count: z.number().int(),
        currency: z.enum(['USD', 'EUR']),
        memo: z.string().optional(),
      }),
      risk: 'irreversible_write',
      supportsIdempotency: true,
      approval: 'never',
      execute: run('pay'),
    },
    {
      ...base,
      name: 'send',
      description: 'a message that cannot be deduplicated',
      inputSchema: z.object({ to: z.string(), priority: z.number().int().optional(), weight: z.number().optional() }),
      risk: 'irreversible_write',
      supportsIdempotency: false,
      approval: 'never',
      execute: run('send'),
    },
    {
      ...base,
      name: 'lookup',
      description: 'a strict read',
      inputSchema: z.strictObject({ q: z.string(), limit: z.number().int().optional() }),
      risk: 'read',
      supportsIdempotency: false,
      approval: 'never',
      execute: run('lookup'),
    },
    {
      ...base,
      name: 'refund',
      description: 'a keyed refund, a person above 500',
      inputSchema: z.object({ amount: z.number(), reason: z.string().optional() }),
      risk: 'irreversible_write',
      supportsIdempotency: true,
      approval: (input: { amount: number }) => input.amount > 500,
      execute: run('refund'),
    },
  ] as ToolSpec[];
}

/** A credential a door presents: a bearer key, or an access token. */
export interface Credential {
  kind: 'key' | 'keySha256' | 'token-mapped' | 'token-oauth';
  bearer: string;
}

/** One case's world: the store, the configuration, the app and `/mcp`, a clock that moves a millisecond per read. */
export interface World {
  deps: Deps;
  store: ReturnType<typeof memoryStore>;
  executions: Execution[];
  api: (request: Request) => Promise<Response>;
  mcp: (request: Request) => Promise<Response>;
}

/**
 * The `Tools` function as the privileged functions meet it with `toolIsolation: "function"`: each invocation's
 * payload as JSON text in, the function's answer as JSON bytes out (a throw is Lambda's `FunctionError`), so
 * the description, the argument check and every attempt cross the same boundary as on AWS.
 */
function toolsFunctionClient(tools: ToolRegistry) {
  const encoder = new TextEncoder();
  return {
    async send(command: { input: { Payload?: unknown } }) {
      try {
        const answer = await answerToolsEvent(tools, JSON.parse(String(command.input.Payload)));
        return { StatusCode: 200, Payload: encoder.encode(JSON.stringify(answer)) };
      } catch (error) {
        return { StatusCode: 200, FunctionError: 'Unhandled', Payload: encoder.encode(JSON.stringify({ errorMessage: String(error) })) };
      }
    },
  } as unknown as Parameters<typeof lambdaToolHost>[0];
}

/**
 * One case's world. `isolated`: the tools live in a `Tools` function (the default deployed shape), so this
 * side knows them from their description and each call's hooks from the check at validation.
 */
export async function buildWorld(config: RunnerConfig, startAt: number, options: { isolated?: boolean } = {}): Promise<World> {
  let clock = startAt;
  const now = () => clock++;
  const store = memoryStore(() => clock);
  const executions: Execution[] = [];
  const tools = differentialTools(executions);
  let registry: ToolRegistry = makeRegistry(tools);
  let isolation: Pick<Deps, 'toolHost' | 'toolDirectory'> = {};
  if (options.isolated) {
    const client = toolsFunctionClient(registry);
    const toolDirectory = lambdaToolDirectory(client, 'Tools');
    const described = describedRegistry(() => toolDirectory.describe());
    await described.refresh();
    registry = described;
    isolation = {
      toolDirectory,
      toolHost: lambdaToolHost(client, 'Tools', { has: (name: string) => toolDirectory.hosts(name) } as ReadonlySet<string>),
    };
  }
  const policy = config.policies ? compilePolicies(config.policies, tools, config.principals) : undefined;
  if (policy && !policy.ok) throw new Error(`policies refused at load: ${JSON.stringify(policy.problems)}\n${config.policies}`);
  // The Step Functions machine, in process: each start runs the steps until the record waits or is done.
  const tokens = new Map<string, string>();
  let deps!: Deps;
  const drive = async (operationId: string) => {
    for (let i = 0; i < 30; i++) {
      const op = (await store.getOperation(operationId))!;
      const next = nextStep(op, clock);
      switch (next) {
        case 'validate':
          await routeByRecord(deps, operationId);
          break;
        case 'await_approval': {
          if (op.state === 'awaiting_approval' && op.approvalTaskToken) return;
          const token = `tok_${operationId}_${i}`;
          tokens.set(token, operationId);
          await requestApproval(deps, operationId, token);
          break;
        }
        case 'expire_approval':
          await expireApprovalStep(deps, operationId);
          break;
        case 'execute':
        case 'retry':
          await executeAttempt(deps, operationId);
          break;
        case 'reconcile':
        case 'reconcile_later':
          await reconcileOutcome(deps, operationId);
          break;
        case 'report':
          await reportEnvelope(deps, operationId);
          break;
        case 'done':
          return;
      }
    }
    throw new Error(`operation ${operationId} did not settle`);
  };
  const lifecycle: LifecyclePort = {
    start: (input) => drive(input.operationId),
    startSync: (input) => drive(input.operationId),
    stop: async () => undefined,
    sendTaskSuccess: async (token) => drive(tokens.get(token)!),
    sendTaskFailure: async (token) => drive(tokens.get(token)!),
  };
  deps = {
    store,
    tools: registry,
    config: async () => ({ ...config, approvalSecret: SECRET }),
    lifecycle,
    notifier: { approvalRequested: async () => undefined },
    now,
    random: () => 0.5,
    publicBaseUrl: BASE_URL,
    ...(policy ? { policies: async () => policy.evaluator } : {}),
    ...isolation,
  };
  const app = makeApp(deps, 2);
  const api = async (request: Request) => app.fetch(request);
  const routes = mcpRoutes({
    api,
    config: deps.config,
    publicBaseUrl: () => BASE_URL,
    tools: registry,
    runs: store,
    waitMs: 2000,
    now,
  });
  const mcp = async (request: Request) => routes.fetch(request);
  return { deps, store, executions, api, mcp };
}

const json = (bearer: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${bearer}`,
  'content-type': 'application/json',
  ...extra,
});

async function apiCall(world: World, bearer: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await world.api(
    new Request(`${BASE_URL}${path}`, {
      method,
      headers: json(bearer, headers),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
  const parsed = await bodyOf(res);
  return { status: res.status, body: parsed };
}

function fromHttpError(status: number, body: any): DoorDecision {
  if (status >= 400 && status < 500) return { kind: 'refused', code: String(body?.error?.code ?? status) };
  return { kind: 'error', detail: `HTTP ${status} ${JSON.stringify(body).slice(0, 200)}` };
}

/** An envelope (or the pending answer) as a decision. */
export function fromEnvelope(envelope: any): DoorDecision {
  if (envelope?.status === 'succeeded') return { kind: 'allow' };
  if (envelope?.status === 'pending' && envelope.state === 'awaiting_approval') return { kind: 'approval' };
  if (envelope?.status === 'rejected') return { kind: 'deny', code: String(envelope.code) };
  return { kind: 'error', detail: `envelope ${JSON.stringify(envelope).slice(0, 200)}` };
}

export async function newRun(world: World, bearer: string): Promise<string> {
  const created = await apiCall(world, bearer, 'POST', '/v1/runs', {});
  if (created.status !== 201) throw new Error(`POST /v1/runs: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.runId;
}

/** `POST /v1/runs/{runId}/tool-calls/preview` (the run is the one the submission then uses: a preview changes nothing). */
export async function previewDoor(world: World, bearer: string, runId: string, name: string, args: unknown): Promise<DoorDecision> {
  const res = await apiCall(world, bearer, 'POST', `/v1/runs/${runId}/tool-calls/preview`, { name, arguments: args });
  if (res.status !== 200) return fromHttpError(res.status, res.body);
  const d = res.body.decision;
  return d === 'allow' ? { kind: 'allow' } : d === 'require_approval' ? { kind: 'approval' } : { kind: 'deny', code: res.body.code };
}

/** `POST /v1/runs/{runId}/tool-calls`, waiting: the decision, and the operation it made (for the link door). */
export async function submitDoor(
  world: World,
  bearer: string,
  runId: string,
  name: string,
  args: unknown,
): Promise<{ decision: DoorDecision; operationId?: string }> {
  const res = await apiCall(
    world,
    bearer,
    'POST',
    `/v1/runs/${runId}/tool-calls`,
    { callId: 'c1', turn: 1, name, arguments: args },
    {
      prefer: 'wait=2',
    },
  );
  if (res.status === 200) return { decision: fromEnvelope(res.body), operationId: res.body.logical_operation_id };
  if (res.status === 202) {
    const op = (await world.store.getOperation(res.body.operationId))!;
    return { decision: opDecision(op), operationId: op.operationId };
  }
  return { decision: fromHttpError(res.status, res.body) };
}

/** Where an operation stands, as a decision. */
export function opDecision(op: OperationRecord): DoorDecision {
  if (op.state === 'awaiting_approval' && op.approval?.state === 'pending') return { kind: 'approval' };
  if (op.outcome?.kind === 'succeeded') return { kind: 'allow' };
  if (op.outcome?.kind === 'rejected') return { kind: 'deny', code: op.outcome.code };
  return { kind: 'error', detail: `operation ${op.state} ${JSON.stringify(op.outcome ?? null).slice(0, 200)}` };
}

/**
 * The approval link: the approver lists its approvals (each with a link signed for it), opens the link and
 * approves; the call then runs through the re-check before its attempt. Answers the call's end.
 */
export async function linkDoor(world: World, approverBearer: string, operationId: string): Promise<DoorDecision> {
  const listed = await apiCall(world, approverBearer, 'GET', '/v1/approvals');
  if (listed.status !== 200) return fromHttpError(listed.status, listed.body);
  const approval = (listed.body.approvals as { operationId: string; url: string }[]).find((a) => a.operationId === operationId);
  if (!approval) return { kind: 'error', detail: 'the approver does not see the approval' };
  const url = new URL(approval.url);
  const page = await world.api(new Request(`${BASE_URL}${url.pathname}${url.search}`));
  if (page.status !== 200) return { kind: 'refused', code: `link GET ${page.status}` };
  const decided = await world.api(
    new Request(`${BASE_URL}${url.pathname}${url.search}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    }),
  );
  if (decided.status !== 200) return { kind: 'refused', code: `link POST ${decided.status}` };
  return opDecision((await world.store.getOperation(operationId))!);
}

const LEGACY_HEADERS = { accept: 'application/json, text/event-stream', host: 'runner.test' };

async function mcpPost(world: World, bearer: string, body: unknown, headers: Record<string, string>) {
  const res = await world.mcp(
    new Request(`${BASE_URL}/mcp`, {
      method: 'POST',
      headers: json(bearer, { ...LEGACY_HEADERS, ...headers }),
      body: JSON.stringify(body),
    }),
  );
  const parsed = await bodyOf(res);
  return { status: res.status, headers: res.headers, body: parsed };
}

function fromMcpReply(reply: { status: number; body: any }): DoorDecision {
  const { body } = reply;
  if (body?.error) {
    if (body.error.code === -32602) return { kind: 'refused', code: messageCode(body.error.message) };
    return { kind: 'error', detail: `JSON-RPC ${body.error.code} ${String(body.error.message).slice(0, 160)}` };
  }
  const result = body?.result;
  if (!result) return { kind: 'error', detail: `HTTP ${reply.status} ${JSON.stringify(body).slice(0, 200)}` };
  const content = result.structuredContent;
  if (content?.error) return { kind: 'refused', code: String(content.error.code) };
  return fromEnvelope(content);
}

/** `invalid_request: …` → `invalid_request`: the API's code an MCP error carries at the head of its message. */
const messageCode = (message: string) => /^([a-z_]+):/.exec(String(message))?.[1] ?? 'invalid_params';

/** `/mcp` at 2025-11-25: initialize (a run for the session), then `tools/call`. */
export async function mcpLegacyDoor(world: World, bearer: string, name: string, args: unknown): Promise<DoorDecision> {
  const init = await mcpPost(
    world,
    bearer,
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'differential', version: '1' } },
    },
    {},
  );
  const sessionId = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !sessionId) return fromHttpError(init.status, init.body);
  const reply = await mcpPost(
    world,
    bearer,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
  );
  return fromMcpReply(reply);
}

let modernCalls = 0;
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** `/mcp` at 2026-07-28: one request, in the principal's current MCP run. */
export async function mcpModernDoor(world: World, bearer: string, name: string, args: unknown): Promise<DoorDecision> {
  // Its own callId: another credential of the same principal joins the same current run, where the callId
  // derived from (run, tool, arguments) would make this call a replay of that one.
  const meta = { ...META, 'toolrunner/callId': `modern_${++modernCalls}` };
  const reply = await mcpPost(
    world,
    bearer,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: meta } },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
  );
  return fromMcpReply(reply);
}

const inProcessFetch = (world: World) => (url: string, init: RequestInit) => world.api(new Request(url, init));

function fromThrown(error: unknown): DoorDecision {
  if (error instanceof ToolRunnerError && error.status >= 400 && error.status < 500) return { kind: 'refused', code: error.code };
  return { kind: 'error', detail: `${(error as Error).name}: ${(error as Error).message}` };
}

function fromModelResult(result: any): DoorDecision {
  if (result?.error) return { kind: 'refused', code: String(result.error.code) };
  return fromEnvelope(result);
}

/** The AI SDK adapter: its approval question, then (where no person is asked) the tool's `execute`. */
export async function aiSdkDoor(world: World, bearer: string, name: string, args: unknown): Promise<DoorDecision> {
  try {
    const adapter = await toolrunnerAiSdk({ baseUrl: BASE_URL, key: bearer, fetch: inProcessFetch(world) });
    const tool = adapter.tools[name] as any;
    if (!tool) return { kind: 'hidden' };
    const options = { toolCallId: 'ai_1', messages: [] };
    const held = await tool.needsApproval(args, options);
    if (held) return { kind: 'approval' };
    return fromModelResult(await tool.execute(args, { ...options, abortSignal: new AbortController().signal }));
  } catch (error) {
    return fromThrown(error);
  }
}

/** The OpenAI Agents adapter: `needsApproval`, then the function tool's `invoke` as the SDK calls it. */
export async function agentsDoor(world: World, bearer: string, name: string, args: unknown): Promise<DoorDecision> {
  try {
    const adapter = await toolrunnerAgents({ baseUrl: BASE_URL, key: bearer, fetch: inProcessFetch(world) });
    const tool = adapter.tools.find((t) => t.name === name) as any;
    if (!tool) return { kind: 'hidden' };
    const context = new RunContext();
    if (await tool.needsApproval(context, args, 'ag_1')) return { kind: 'approval' };
    const text = await tool.invoke(context, JSON.stringify(args), {
      toolCall: { callId: 'ag_1', name, type: 'function_call', arguments: '' },
    });
    return fromModelResult(typeof text === 'string' ? JSON.parse(text) : text);
  } catch (error) {
    return fromThrown(error);
  }
}

/** A response's JSON body, or the start of its text where it is not JSON. */
async function bodyOf(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return { raw: text.slice(0, 200) };
  }
}
