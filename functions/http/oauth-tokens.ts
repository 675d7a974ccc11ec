import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { OAuthConfig, RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';
import { principalForClaims, tokenRefusal } from '../core/oauth-principal';

/**
 * Access tokens from the configured issuer, verified with `jose`: a signature from the issuer's JWKS (RS256
 * or ES256 only: never `none`, never an HMAC, whose key would be public), that `iss`, unexpired and past
 * `nbf` with 60 s of clock skew. The JWKS is found through the issuer's metadata (or `jwksUri`) and cached by
 * `jose`, which fetches it again when a token names a key it does not know (at most every 30 s).
 */

const ALGORITHMS = ['RS256', 'ES256'];
const CLOCK_SKEW_SECONDS = 60;

/** One key set per issuer and JWKS URL in this process: a cache, rebuilt after a restart. */
const keySets = new Map<string, Promise<JWTVerifyGetKey>>();

async function jwksUriOf(oauth: OAuthConfig): Promise<string> {
  if (oauth.jwksUri) return oauth.jwksUri;
  const base = oauth.issuer.replace(/\/$/, '');
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
    if (!res?.ok) continue;
    const metadata = (await res.json().catch(() => ({}))) as { jwks_uri?: unknown; issuer?: unknown };
    if (typeof metadata.jwks_uri === 'string') return metadata.jwks_uri;
  }
  throw new Error(`no JWKS found for the issuer ${oauth.issuer} (its metadata names no jwks_uri)`);
}

function keySetOf(oauth: OAuthConfig): Promise<JWTVerifyGetKey> {
  const id = `${oauth.issuer}\n${oauth.jwksUri ?? ''}`;
  let keySet = keySets.get(id);
  if (!keySet) {
    keySet = jwksUriOf(oauth).then((uri) => createRemoteJWKSet(new URL(uri), { cooldownDuration: 30_000, timeoutDuration: 5_000 }));
    // A failed discovery is tried again on the next token, not remembered.
    keySet.catch(() => keySets.delete(id));
    keySets.set(id, keySet);
  }
  return keySet;
}

export type TokenCheck = { ok: true; principal: Principal; expiresAt: number } | { ok: false; reason: string };

/** Verifies an access token and maps it to its principal; a refusal says why (for logs, never for the caller). */
export async function verifyAccessToken(config: RunnerConfig, token: string, resourceUrls: string[]): Promise<TokenCheck> {
  const oauth = config.oauth;
  if (!oauth) return { ok: false, reason: 'no OAuth issuer is configured' };
  try {
    const { payload } = await jwtVerify(token, await keySetOf(oauth), {
      issuer: oauth.issuer,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ['exp'],
    });
    const refusal = tokenRefusal(payload, oauth, resourceUrls);
    if (refusal) return { ok: false, reason: refusal };
    const principal = principalForClaims(config, oauth, payload);
    if (!principal) return { ok: false, reason: `the token has no ${oauth.principalClaim} claim` };
    return { ok: true, principal, expiresAt: (payload.exp as number) * 1000 };
  } catch (error) {
    const reason = error instanceof errors.JOSEError ? error.code : (error as Error).message;
    return { ok: false, reason };
  }
}
