import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { McpUpstream, RunnerConfig, UpstreamToolPolicy } from '../core/config';
import { isMalformedAnswer, MalformedAnswerError, TransportError, UpstreamHttpError } from '../core/errors';
import { describeBytes, RESULT_LIMITS } from '../core/result-record';
import { checkToolSpec, type ToolContext, type ToolRegistry, type ToolSpec, toolsReady } from '../core/tool-spec';
import { connectModern, modernAttemptError, speaksModern, type UpstreamClient } from './mcp-upstream-2026';
import { defaultLog } from '../core/log';

/**
 * Proxy mode: the tools of upstream MCP servers, registered as `<upstream>__<tool>` with the policy the
 * configuration gives them, so their calls go through the whole lifecycle like any other tool.
 */

export const IDEMPOTENCY_META_KEY = 'toolrunner/idempotencyKey';

/** A tool nobody configured: treated as the most dangerous kind unless the upstream says it only reads. */
function policyFor(upstream: McpUpstream, tool: Tool): Required<Omit<UpstreamToolPolicy, 'timeoutMs'>> & { timeoutMs: number } {
  const configured = upstream.tools?.[tool.name] ?? upstream.defaultPolicy;
  const risk = configured?.risk ?? (tool.annotations?.readOnlyHint === true ? 'read' : 'irreversible_write');
  return {
    risk,
    approval: configured?.approval ?? 'never',
    timeoutMs: configured?.timeoutMs ?? 30_000,
    maxAttempts: configured?.maxAttempts ?? (risk === 'read' ? 3 : 1),
    supportsIdempotency: configured?.supportsIdempotency ?? risk === 'read',
  };
}

/** The upstream's JSON Schema as the zod schema validation needs; an object schema is required. */
export function zodFromJsonSchema(schema: Tool['inputSchema']): z.ZodObject {
  try {
    const converted = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    if (converted instanceof z.ZodObject) return converted;
  } catch {
    // Fall through: a schema zod cannot express is left to the upstream to enforce.
  }
  return z.looseObject({});
}

/**
 * One client per upstream, connected on first use and dropped after a transport failure: at 2026-07-28 when
 * the upstream's `server/discover` lists it (mcp-upstream-2026.ts), else at 2025-11-25 with `initialize`.
 */
export class UpstreamConnection {
  private client?: Promise<UpstreamClient>;
  constructor(readonly upstream: McpUpstream) {}

  get(): Promise<UpstreamClient> {
    this.client ??= this.connect().catch((error) => {
      this.client = undefined;
      throw error;
    });
    return this.client;
  }

  reset(): void {
    const old = this.client;
    this.client = undefined;
    void old?.then((c) => c.close()).catch(() => undefined);
  }

  private async connect(): Promise<UpstreamClient> {
    const headers = this.upstream.headers ?? {};
    if (await speaksModern(this.upstream.url, headers, answerCheckingFetch))
      return connectModern(this.upstream.url, headers, answerCheckingFetch);
    const client = new Client({ name: 'toolrunner', version: '0.1.0' });
    // Bounded: a hanging upstream must not hold up the steps waiting for the registry.
    await client.connect(
      new StreamableHTTPClientTransport(new URL(this.upstream.url), { requestInit: { headers }, fetch: answerCheckingFetch }),
      {
        timeout: 10_000,
      },
    );
    return {
      listTools: (cursor) => client.listTools(cursor ? { cursor } : undefined, { timeout: 10_000 }),
      callTool: (params, ctx) =>
        client.callTool(params, undefined, {
          signal: ctx.signal,
          timeout: Math.max(1, ctx.deadline - Date.now()),
        }) as Promise<CallToolResult>,
      close: () => client.close(),
    };
  }
}

/** The most a `tools/call` answer may hold: the largest recordable result, with room for its JSON-RPC wrapping. */
const MAX_ANSWER_BYTES = RESULT_LIMITS.maxRecordedBytes + 1024 * 1024;

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The body's text, refused past `limit` bytes without reading the rest. */
async function boundedText(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new MalformedAnswerError(`the upstream's answer is larger than ${describeBytes(limit)}`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The MCP client's fetch. A JSON answer to a `tools/call` is read here first, bounded, and must hold the
 * response to that call: otherwise the client would wait for it until the timeout, and an upstream that
 * answered badly would pass for one that never answered (`timeout_unknown`).
 */
async function answerCheckingFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const response = await fetch(url, init);
  const sent =
    init?.method === 'POST' && typeof init.body === 'string'
      ? (parsedOrUndefined(init.body) as { id?: unknown; method?: unknown })
      : undefined;
  if (sent?.method !== 'tools/call' || !response.ok || !response.headers.get('content-type')?.startsWith('application/json'))
    return response;
  const text = await boundedText(response, MAX_ANSWER_BYTES);
  const parsed = parsedOrUndefined(text);
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  const answers = messages.some(
    (m) => typeof m === 'object' && m !== null && (m as { id?: unknown }).id === sent.id && ('result' in m || 'error' in m),
  );
  if (!answers) throw new MalformedAnswerError('the upstream answered the call without a JSON-RPC response to it');
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Lists an upstream's tools (every page) and turns each into a ToolSpec. A tool that cannot be registered
 * (a name the providers refuse, a policy the runner refuses) is skipped with one log line; the others stay.
 */
export async function upstreamToolSpecs(connection: UpstreamConnection, log: (line: string) => void = logLine): Promise<ToolSpec[]> {
  const client = await connection.get();
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const specs: ToolSpec[] = [];
  for (const tool of tools) {
    try {
      specs.push(toolSpecOf(connection, tool));
    } catch (error) {
      const name = JSON.stringify(printable(String(tool.name).slice(0, 80)));
      log(`mcp upstream ${connection.upstream.name}: tool ${name} skipped: ${printable((error as Error).message)}`);
    }
  }
  return specs;
}

const logLine = (line: string) => defaultLog().warn(line);

/** A log line carries an upstream's text on one line, without control or direction characters. */
function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point: they are replaced.
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, '?').slice(0, 300);
}

function toolSpecOf(connection: UpstreamConnection, tool: Tool): ToolSpec {
  const policy = policyFor(connection.upstream, tool);
  const spec: ToolSpec = {
    name: `${connection.upstream.name}__${tool.name}`,
    description: tool.description ?? tool.title ?? `${tool.name} on ${connection.upstream.name}`,
    inputSchema: zodFromJsonSchema(tool.inputSchema),
    // The upstream's answer is passed on as is: structuredContent when it has one, else its content blocks.
    outputSchema: z.unknown(),
    ...policy,
    execute: (ctx, input) => callUpstream(connection, tool.name, ctx, input),
  };
  checkToolSpec(spec);
  return spec;
}

async function callUpstream(connection: UpstreamConnection, toolName: string, ctx: ToolContext, input: unknown): Promise<unknown> {
  let client: UpstreamClient;
  try {
    client = await connection.get();
  } catch (error) {
    // The call itself was never sent: safe to retry whatever the tool does.
    throw new TransportError('refused', false, `could not connect to upstream ${connection.upstream.name} (${(error as Error).message})`, {
      cause: error,
    });
  }
  let result: CallToolResult;
  try {
    result = await client.callTool(
      { name: toolName, arguments: input as Record<string, unknown>, _meta: { [IDEMPOTENCY_META_KEY]: ctx.idempotencyKey } },
      ctx,
    );
  } catch (error) {
    throw attemptError(connection, ctx, error);
  }
  ctx.onUpstreamStatus(200);
  if (result.isError) {
    // The tool ran and refused: a permanent answer, not something a retry changes.
    throw new UpstreamHttpError(422, 'tool_error', undefined, `upstream tool ${toolName} reported an error`);
  }
  return result.structuredContent ?? { content: result.content };
}

const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * What the client itself throws when the upstream's answer arrived but is not a CallToolResult, or breaks
 * the output schema the upstream declared: the upstream answered (a write may have acted), badly.
 */
const MALFORMED_MESSAGES = [
  /did not return structured content/,
  /Structured content does not match/,
  /Failed to validate structured content/,
];

function isMalformedResult(error: unknown): boolean {
  if (error instanceof Error && isMalformedAnswer(error)) return true;
  // An answer of a content type that is neither JSON nor an event stream.
  if (error instanceof StreamableHTTPError && error.code === -1) return true;
  const name = (error as Error | undefined)?.name;
  // The client's own checks of what arrived: JSON that does not parse, a message that is not JSON-RPC or not a result.
  if (name === 'ZodError' || name === '$ZodError' || name === 'SyntaxError') return true;
  return error instanceof McpError && MALFORMED_MESSAGES.some((m) => m.test(error.message));
}

/** Maps what the MCP client threw onto the transport errors the lifecycle classifies. */
function attemptError(connection: UpstreamConnection, ctx: ToolContext, error: unknown): Error {
  const modern = modernAttemptError(error, ctx, () => connection.reset());
  if (modern) return modern;
  if (isMalformedResult(error))
    return isMalformedAnswer(error as Error)
      ? (error as Error)
      : new MalformedAnswerError('the upstream answered with something that is not an MCP tool result');
  if (ctx.signal.aborted || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)) {
    const timedOut = !ctx.signal.aborted || (ctx.signal.reason as Error | undefined)?.name === 'TimeoutError';
    return new TransportError(timedOut ? 'timeout' : 'aborted', true, `the upstream call was ${timedOut ? 'timed out' : 'aborted'}`);
  }
  if (error instanceof StreamableHTTPError && error.code !== undefined) {
    if (error.code === 404) {
      // The upstream forgot our session before handling the call: reconnect, and the retry is safe.
      connection.reset();
      return new TransportError('refused', false, 'the upstream session expired');
    }
    if (error.code >= 500 || error.code === 429) connection.reset();
    return new UpstreamHttpError(error.code, undefined, undefined, `upstream answered ${error.code}`);
  }
  if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
    return new UpstreamHttpError(400, `mcp_${error.code}`, undefined, `upstream refused the call (${error.code})`);
  }
  connection.reset();
  const code = networkCode(error);
  if (typeof code === 'string' && NOT_SENT.has(code)) return new TransportError('refused', false, `connection failed (${code})`);
  return new TransportError('reset', true, `connection to the upstream lost (${code ?? 'unknown'})`);
}

/** The network error code in an error or its causes (the v2 client wraps fetch's error once more). */
function networkCode(error: unknown): string | undefined {
  let current = error as { cause?: unknown; code?: unknown } | undefined;
  for (let depth = 0; current && depth < 4; depth++, current = current.cause as typeof current) {
    const cause = (current.cause as { code?: unknown } | undefined)?.code;
    if (typeof cause === 'string' && NOT_SENT.has(cause)) return cause;
  }
  const top = (error as { cause?: { code?: unknown }; code?: unknown })?.cause?.code ?? (error as { code?: unknown })?.code;
  return typeof top === 'string' ? top : undefined;
}

/** A registry that also holds the configured upstreams' tools, reloaded when that part of the config changes. */
export interface LiveToolRegistry extends ToolRegistry {
  refresh(): Promise<void>;
}

/**
 * The base tools plus every configured upstream's tools. `refresh()` (awaited before validation, tool
 * listing and execution) loads them; an upstream that failed to load is retried after `retryMs`.
 */
export function withMcpUpstreams(
  base: ToolRegistry,
  config: () => Promise<Pick<RunnerConfig, 'mcpUpstreams'>>,
  options: { retryMs?: number; log?: (line: string) => void } = {},
): LiveToolRegistry {
  const registry = new Map(base) as Map<string, ToolSpec> & LiveToolRegistry;
  const connections = new Map<string, UpstreamConnection>();
  const log = options.log ?? logLine;
  let loadedFor: string | undefined;
  let retryAt = 0;
  let loading: Promise<void> | undefined;

  async function load(upstreams: McpUpstream[], signature: string): Promise<void> {
    const specs: ToolSpec[] = [];
    let failed = false;
    for (const [id, connection] of connections) {
      if (!upstreams.some((u) => JSON.stringify(u) === id)) {
        connection.reset();
        connections.delete(id);
      }
    }
    for (const upstream of upstreams) {
      const id = JSON.stringify(upstream);
      const connection = connections.get(id) ?? new UpstreamConnection(upstream);
      connections.set(id, connection);
      try {
        specs.push(...(await upstreamToolSpecs(connection, log)));
      } catch (error) {
        failed = true;
        connection.reset();
        log(`mcp upstream ${upstream.name}: ${(error as Error).message}`);
      }
    }
    for (const name of [...registry.keys()]) if (!base.has(name)) registry.delete(name);
    for (const spec of specs) {
      if (registry.has(spec.name)) log(`mcp upstream tool ${spec.name} ignored: the name is taken`);
      else registry.set(spec.name, spec);
    }
    loadedFor = signature;
    retryAt = failed ? Date.now() + (options.retryMs ?? 5_000) : Infinity;
  }

  registry.refresh = async () => {
    // A base that is itself filled later (the tools described by `Tools`) is brought in first.
    await toolsReady(base);
    for (const [name, spec] of base) if (!registry.has(name)) registry.set(name, spec);
    const upstreams = (await config()).mcpUpstreams ?? [];
    const signature = JSON.stringify(upstreams);
    if (signature === loadedFor && Date.now() < retryAt) return;
    loading ??= load(upstreams, signature).finally(() => {
      loading = undefined;
    });
    await loading;
  };
  return registry;
}

export { toolsReady };
