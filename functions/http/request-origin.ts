import { isLoopbackAddress } from '../core/loopback';

export { isLoopbackAddress };

/**
 * DNS-rebinding protection for `/mcp`. A page on another site whose name resolves to this server (or to
 * 127.0.0.1) makes the victim's browser send requests here: its `Host` is the attacker's name and its
 * `Origin` the attacker's page. So:
 * - an `Origin`, when present, must equal the request's own origin or be listed in `mcpAllowedOrigins`;
 * - `Host` must be the host of the public base URL (the API's URL) or, when the server listens on
 *   loopback, `localhost`, `127.0.0.1` or `[::1]` on any port.
 * Anything else is refused (403).
 */
export interface OriginPolicy {
  /** The API's public URL (`PUBLIC_BASE_URL`; the API Gateway URL on AWS). */
  publicBaseUrl: string;
  /** `mcpAllowedOrigins` from the configuration: exact origins, `scheme://host[:port]`. */
  allowedOrigins: readonly string[];
  /** The server listens on a loopback address (the embedded stack, a developer's machine). */
  onLoopback: boolean;
}

export type OriginCheck = { ok: true } | { ok: false; reason: string };

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
/** A `Host` header: a DNS name or IPv4 address, or a bracketed IPv6 address, and an optional port. Nothing else. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/;
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/**
 * Checks one request's `Host` and `Origin` against the policy. The scheme the client used is the
 * `X-Forwarded-Proto` a gateway in front sets (API Gateway does; its Lambda event's URL always says https),
 * else the request URL's.
 */
export function checkRequestOrigin(
  request: { url: string; host: string | null; origin: string | null; forwardedProto?: string | null },
  policy: OriginPolicy,
): OriginCheck {
  const host = request.host?.trim().toLowerCase() ?? '';
  const parsed = HOST_HEADER.exec(host);
  if (!parsed) return { ok: false, reason: 'the Host header is missing or malformed' };
  const [, hostname, port] = parsed;
  const forwarded = request.forwardedProto?.split(',')[0].trim().toLowerCase();
  const scheme = forwarded === 'http' || forwarded === 'https' ? `${forwarded}:` : new URL(request.url).protocol;
  if (!hostAllowed(hostname, port ?? DEFAULT_PORTS[scheme], policy)) return { ok: false, reason: `Host ${host} is not this server` };
  if (request.origin === null) return { ok: true };
  const origin = normalizedOrigin(request.origin);
  const own = new URL(`${scheme}//${host}`).origin;
  if (origin !== undefined && (origin === own || policy.allowedOrigins.includes(origin))) return { ok: true };
  return { ok: false, reason: `Origin ${request.origin.slice(0, 200)} may not call this server` };
}

function hostAllowed(hostname: string, port: string | undefined, policy: OriginPolicy): boolean {
  if (policy.onLoopback && LOOPBACK_NAMES.has(hostname)) return true;
  const base = new URL(policy.publicBaseUrl);
  return hostname === base.hostname && port === (base.port || DEFAULT_PORTS[base.protocol]);
}

/** The serialized origin, or undefined unless `text` is exactly one (`null`, from sandboxed frames and files, is not). */
function normalizedOrigin(text: string): string | undefined {
  try {
    const origin = new URL(text).origin;
    return origin !== 'null' && origin === text ? origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether this server listens on loopback: the local socket's address where the Node server exposes it
 * (`npm start`), else whether the public base URL names a loopback host (a Lambda has no socket of its own).
 * `env` is the Hono context's `env` (the Node server's `incoming`, or the Lambda event and context).
 */
export function listensOnLoopback(env: unknown, publicBaseUrl: string): boolean {
  const local = (env as { incoming?: { socket?: { localAddress?: string } } } | undefined)?.incoming?.socket?.localAddress;
  if (local) return isLoopbackAddress(local);
  return isLoopbackAddress(new URL(publicBaseUrl).hostname);
}
