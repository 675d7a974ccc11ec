import { Client, ProtocolError, SdkError, SdkErrorCode, SdkHttpError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { MalformedAnswerError, TransportError, UpstreamHttpError } from '../core/errors';
import type { ToolContext } from '../core/tool-spec';

/**
 * Proxy mode towards upstreams that speak MCP revision 2026-07-28: found by a `server/discover` probe, then
 * served by the SDK's v2 client pinned to that revision (no handshake, no session). Upstreams that do not
 * answer the probe keep the 2025-11-25 client (mcp-upstream.ts); nothing changes for them.
 */

export const MODERN_REVISION = '2026-07-28';

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** What proxy mode asks of an upstream, at either revision. */
export interface UpstreamClient {
  listTools(cursor: string | undefined): Promise<{ tools: Tool[]; nextCursor?: string }>;
  callTool(
    params: { name: string; arguments: Record<string, unknown>; _meta: Record<string, unknown> },
    ctx: ToolContext,
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}

/**
 * Whether the upstream serves 2026-07-28: a `server/discover` that lists it. Anything else (an error, a
 * 2025-era server that wants `initialize` first, a refusal) means it does not.
 */
export async function speaksModern(url: string, headers: Record<string, string>, fetchFn: Fetch): Promise<boolean> {
  try {
    const response = await fetchFn(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_REVISION,
        'mcp-method': 'server/discover',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'server/discover',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN_REVISION,
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'toolrunner', version: '0.1.0' },
          },
        },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok || !response.headers.get('content-type')?.startsWith('application/json')) return false;
    const body = (await response.json()) as { result?: { supportedVersions?: unknown } };
    return Array.isArray(body.result?.supportedVersions) && body.result.supportedVersions.includes(MODERN_REVISION);
  } catch {
    return false;
  }
}

/** The v2 client, pinned to 2026-07-28, behind the same checking fetch as the 2025 client. */
export async function connectModern(url: string, headers: Record<string, string>, fetchFn: Fetch): Promise<UpstreamClient> {
  const client = new Client({ name: 'toolrunner', version: '0.1.0' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: fetchFn }), { timeout: 10_000 });
  return {
    async listTools(cursor) {
      // Always asked again: a refresh is how the registry learns of a changed list.
      return (await client.listTools(cursor ? { cursor } : undefined, { timeout: 10_000, cacheMode: 'bypass' })) as {
        tools: Tool[];
        nextCursor?: string;
      };
    },
    async callTool(params, ctx) {
      return (await client.callTool(params, { signal: ctx.signal, timeout: Math.max(1, ctx.deadline - Date.now()) })) as CallToolResult;
    },
    close: () => client.close(),
  };
}

/**
 * What the v2 client threw, as the transport errors the lifecycle classifies; undefined where only the
 * network cause can tell (mcp-upstream.ts decides, as for the 2025 client). `reset` drops the connection.
 */
export function modernAttemptError(error: unknown, ctx: ToolContext, reset: () => void): Error | undefined {
  if (error instanceof SdkHttpError) {
    if (error.status >= 500 || error.status === 429) reset();
    return new UpstreamHttpError(error.status, undefined, undefined, `upstream answered ${error.status}`);
  }
  if (error instanceof ProtocolError)
    return new UpstreamHttpError(400, `mcp_${error.code}`, undefined, `upstream refused the call (${error.code})`);
  if (!(error instanceof SdkError)) return undefined;
  if (error.code === SdkErrorCode.InvalidResult || error.code === SdkErrorCode.UnsupportedResultType)
    return new MalformedAnswerError('the upstream answered with something that is not an MCP tool result');
  if (ctx.signal.aborted || error.code === SdkErrorCode.RequestTimeout) {
    const timedOut = !ctx.signal.aborted || (ctx.signal.reason as Error | undefined)?.name === 'TimeoutError';
    return new TransportError(timedOut ? 'timeout' : 'aborted', true, `the upstream call was ${timedOut ? 'timed out' : 'aborted'}`);
  }
  // A send that failed or a connection that closed: whether it was sent is in its cause (mcp-upstream.ts decides).
  return undefined;
}
