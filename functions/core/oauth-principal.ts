import type { OAuthConfig, RunnerConfig } from './config';
import type { Principal, Role } from './model';
import { findPrincipal, TOKEN_PRINCIPAL_PREFIX } from './policy';

/**
 * What an access token means to the runner, decided from its verified claims alone (the signature, issuer and
 * lifetime are checked before, in functions/http/oauth-tokens.ts): whether it was issued for this resource,
 * whether it is an access token at all, and which principal it names.
 */

export type TokenClaims = Record<string, unknown>;

const ROLES: readonly Role[] = ['agent', 'approver', 'reviewer', 'admin'];

/** The `typ` header values of an access token (RFC 9068 section 2.1; the `application/` prefix may be left out). */
const ACCESS_TOKEN_TYPES = ['at+jwt', 'application/at+jwt'];

/** The registered times a token may carry, in seconds: finite numbers (JSON's `1e400` parses as Infinity). */
const TIME_CLAIMS = ['exp', 'nbf', 'iat'] as const;

/**
 * Why a verified token is still refused, or undefined when it is an access token for this resource: `typ`
 * `at+jwt` or absent (a `JWT` is some other token: an ID token, a client assertion), a finite `exp`, and an
 * `aud` of strings naming this resource (`audience`, else the resource URLs). The one exception: a Cognito
 * access token (`token_use: "access"`), which carries no `aud`, names its client in `client_id`, listed in
 * `clientIds`. Any token with an `aud` is judged by it, so one minted for another API that also names a
 * listed client (RFC 9068 tokens always carry `client_id`) is refused.
 */
export function tokenRefusal(
  claims: TokenClaims,
  oauth: Pick<OAuthConfig, 'audience' | 'clientIds'>,
  resourceUrls: string[],
  header: { typ?: unknown } = {},
): string | undefined {
  if (header.typ !== undefined && !(typeof header.typ === 'string' && ACCESS_TOKEN_TYPES.includes(header.typ.toLowerCase())))
    return `the token's typ header is ${JSON.stringify(header.typ)}, not at+jwt`;
  // An ID token says who signed in to a client; it is no permission to call an API (OpenID Connect core, 2).
  if (claims.token_use === 'id' || 'nonce' in claims || 'at_hash' in claims) return 'an ID token is not an access token';
  if (!('exp' in claims)) return 'the token has no exp';
  for (const name of TIME_CLAIMS)
    if (name in claims && !(typeof claims[name] === 'number' && Number.isFinite(claims[name])))
      return `the token's ${name} is not a finite number`;
  if ('aud' in claims) {
    const audiences = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : undefined;
    if (!audiences?.every((a) => typeof a === 'string')) return "the token's aud is not a string or a list of strings";
    const wanted = oauth.audience ? [oauth.audience] : resourceUrls;
    return audiences.some((a) => wanted.includes(a)) ? undefined : 'the token was not issued for this resource';
  }
  // Cognito access tokens carry no aud: the client they were issued to is in client_id.
  const clientId = typeof claims.client_id === 'string' ? claims.client_id : undefined;
  if (claims.token_use === 'access' && clientId && oauth.clientIds?.includes(clientId)) return undefined;
  return 'the token was not issued for this resource';
}

/** The scopes a token carries: `scope` (space-separated) or `scp` (a list or a string). */
export function scopesOf(claims: TokenClaims): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  return Array.isArray(raw) ? raw.map(String) : [];
}

/**
 * The principal a token names: the config principal whose `oauthSubject` is `<iss>|<claim>` (the very object
 * its key reaches: `findPrincipal`, with its attributes), else `oauth:<claim>` with roles from `rolesClaim` or
 * from scopes through `scopeRoles`, and `oauth.tools`. Undefined when the token lacks the claim that names someone.
 */
export function principalForClaims(
  config: Pick<RunnerConfig, 'principals'>,
  oauth: OAuthConfig,
  claims: TokenClaims,
): Principal | undefined {
  const named = claims[oauth.principalClaim];
  if (typeof named !== 'string' || named.length === 0 || named.length > 500) return undefined;
  const subject = `${String(claims.iss)}|${named}`;
  const mapped = findPrincipal(config, (p) => p.oauthSubject === subject);
  if (mapped) return mapped;
  const roles = new Set<Role>();
  if (oauth.rolesClaim) {
    const raw = claims[oauth.rolesClaim];
    const listed = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw.map(String) : [];
    for (const r of listed) if ((ROLES as string[]).includes(r)) roles.add(r as Role);
  }
  for (const scope of scopesOf(claims)) for (const r of oauth.scopeRoles?.[scope] ?? []) roles.add(r);
  return { id: `${TOKEN_PRINCIPAL_PREFIX}${named}`, roles: [...roles], tools: oauth.tools };
}

/** Does a bearer value look like a JWT (three base64url parts), so that it is checked as a token, not a key? */
export function looksLikeJwt(value: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value) && value.length <= 16_384;
}
