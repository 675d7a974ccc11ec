import { TransportError, UpstreamHttpError } from '../core/errors';
import { networkErrorMessage } from '../core/network-error';
import type { ToolContext } from '../core/tool-spec';

/** One HTTP request of `requestJson`: the body is sent as JSON. */
export interface JsonRequest {
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * One HTTP exchange, no retries (the lifecycle is the only retry layer). Non-2xx becomes UpstreamHttpError,
 * transport failures become TransportError saying whether the request may have reached the upstream.
 */
export async function requestJson(ctx: ToolContext, req: JsonRequest): Promise<unknown> {
  let res: Response;
  try {
    // Through the attempt's fetch, so injected faults, cassettes and verify see this request (a hand-made context may lack it).
    res = await (ctx.fetch ?? fetch)(req.url, {
      method: req.method,
      headers: { accept: 'application/json', ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}), ...req.headers },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: ctx.signal,
    });
  } catch (error) {
    throw toTransportError(ctx, req, error);
  }
  ctx.onUpstreamStatus(res.status);
  let text: string;
  try {
    text = await res.text();
  } catch (error) {
    throw toTransportError(ctx, req, error);
  }
  const body = text ? safeJson(text) : undefined;
  if (!res.ok) {
    const code =
      body && typeof body === 'object' && 'error' in body
        ? String((body as { error: { code?: unknown } }).error?.code ?? '') || undefined
        : undefined;
    throw new UpstreamHttpError(res.status, code, retryAfterSeconds(res.headers.get('retry-after')), `upstream answered ${res.status}`);
  }
  return body;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function toTransportError(ctx: ToolContext, req: JsonRequest, error: unknown): TransportError {
  if (ctx.signal.aborted) {
    const reason = (ctx.signal.reason as Error | undefined)?.name === 'TimeoutError' ? 'timeout' : 'aborted';
    return new TransportError(reason, true, `the request was ${reason === 'timeout' ? 'timed out' : 'aborted'}`);
  }
  const code = (error as { cause?: { code?: string } })?.cause?.code ?? (error as { code?: string })?.code;
  const said = networkErrorMessage(req.method, req.url, error);
  if (code && NOT_SENT.has(code)) return new TransportError('refused', false, `connection failed: ${said}`);
  return new TransportError('reset', true, `connection lost: ${said}`);
}
