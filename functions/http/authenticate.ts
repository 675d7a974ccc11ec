import { createHash, timingSafeEqual } from 'node:crypto';
import type { RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';
import { looksLikeJwt } from '../core/oauth-principal';
import { findPrincipal } from '../core/policy';
import { verifyAccessToken } from './oauth-tokens';
import { defaultLog } from '../core/log';

/**
 * Who a request is: the one authentication every surface (the API, `/mcp`, the console's sign-in) shares,
 * so a key or a token means the same principal wherever it is presented.
 */

function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/**
 * Finds the principal for a bearer key, held in the document as the key or as its hex SHA-256 (`keySha256`);
 * compares digests in constant time. Principals with neither are reached by token only.
 */
function principalForKey(config: RunnerConfig, key: string): Principal | undefined {
  const digest = keyDigest(key);
  return findPrincipal(config, (p) => {
    const stored = p.key !== undefined ? keyDigest(p.key) : p.keySha256 !== undefined ? Buffer.from(p.keySha256, 'hex') : undefined;
    return stored !== undefined && timingSafeEqual(stored, digest);
  });
}

/** The key of an `Authorization: Bearer <key>` header, or undefined for any other shape. */
export function bearerKeyOf(header: string | undefined): string | undefined {
  return (header ?? '').match(/^Bearer\s+(\S+)$/i)?.[1];
}

/** The resource a token must be for: the public base URL, and `/mcp` under it (what MCP clients ask tokens for). */
export function resourceUrlsOf(publicBaseUrl: string): string[] {
  const base = publicBaseUrl.replace(/\/$/, '');
  return [base, `${base}/mcp`];
}

export type Authenticated = { principal: Principal; expiresAt?: number };

/**
 * The principal a bearer value names: a key from the principals document, or, when the config has `oauth`, an
 * access token from that issuer. A value that looks like a JWT is checked as a token only; a token is never
 * kept, forwarded to a tool or an upstream, or logged.
 */
export async function authenticateBearer(config: RunnerConfig, value: string, publicBaseUrl: string): Promise<Authenticated | undefined> {
  if (config.oauth && looksLikeJwt(value)) {
    const check = await verifyAccessToken(config, value, resourceUrlsOf(publicBaseUrl));
    if (!check.ok) {
      defaultLog().info('access token refused', { reason: check.reason });
      return undefined;
    }
    return { principal: check.principal, expiresAt: check.expiresAt };
  }
  const principal = principalForKey(config, value);
  return principal && { principal };
}

/**
 * The `WWW-Authenticate` challenge of a 401: where a client finds the authorization server (RFC 9728), and,
 * when the request presented a bearer value that was refused, `error="invalid_token"` (RFC 6750 section 3.1):
 * a client then drops or refreshes its token instead of sending it again. A request with none gets the plain one.
 */
export function bearerChallenge(
  config: Pick<RunnerConfig, 'oauth'>,
  publicBaseUrl: string,
  path: '' | '/mcp' = '',
  presented = false,
): string {
  const params = [
    ...(presented ? ['error="invalid_token"'] : []),
    ...(config.oauth ? [`resource_metadata="${publicBaseUrl.replace(/\/$/, '')}/.well-known/oauth-protected-resource${path}"`] : []),
  ];
  return params.length ? `Bearer ${params.join(', ')}` : 'Bearer';
}

/**
 * RFC 9728 protected-resource metadata for the API (`path` ''), or for `/mcp`. `resource` is the audience a
 * client must ask its token for: `oauth.audience` when set (the only `aud` accepted then), else the URL.
 */
export function protectedResourceMetadata(config: Pick<RunnerConfig, 'oauth'>, publicBaseUrl: string, path: '' | '/mcp' = '') {
  const oauth = config.oauth!;
  return {
    resource: oauth.audience ?? `${publicBaseUrl.replace(/\/$/, '')}${path}`,
    authorization_servers: [oauth.issuer],
    scopes_supported: Object.keys(oauth.scopeRoles ?? {}),
    bearer_methods_supported: ['header'],
  };
}
