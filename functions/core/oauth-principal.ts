import type { OAuthConfig, RunnerConfig } from './config';
import type { Principal, Role } from './model';

/**
 * What an access token means to the runner, decided from its verified claims alone (the signature, issuer and
 * lifetime are checked before, in functions/http/oauth-tokens.ts): whether it was issued for this resource,
 * whether it is an access token at all, and which principal it names.
 */

export type TokenClaims = Record<string, unknown>;

const ROLES: readonly Role[] = ['agent', 'approver', 'reviewer', 'admin'];

/** Why a verified token is still refused, or undefined when it is for this resource. */
export function tokenRefusal(
  claims: TokenClaims,
  oauth: Pick<OAuthConfig, 'audience' | 'clientIds'>,
  resourceUrls: string[],
): string | undefined {
  // An ID token says who signed in to a client; it is no permission to call an API (OpenID Connect core, 2).
  if (claims.token_use === 'id' || 'nonce' in claims || 'at_hash' in claims) return 'an ID token is not an access token';
  const audiences = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud.map(String) : [];
  const wanted = oauth.audience ? [oauth.audience] : resourceUrls;
  if (audiences.some((a) => wanted.includes(a))) return undefined;
  // Cognito access tokens carry no aud: the client they were issued to is in client_id.
  const clientId = typeof claims.client_id === 'string' ? claims.client_id : undefined;
  if (clientId && oauth.clientIds?.includes(clientId) && (claims.token_use === undefined || claims.token_use === 'access'))
    return undefined;
  return 'the token was not issued for this resource';
}

/** The scopes a token carries: `scope` (space-separated) or `scp` (a list or a string). */
export function scopesOf(claims: TokenClaims): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  return Array.isArray(raw) ? raw.map(String) : [];
}

/**
 * The principal a token names: the config principal whose `oauthSubject` is `<iss>|<claim>`, else
 * `oauth:<claim>` with roles from `rolesClaim` or from scopes through `scopeRoles`, and `oauth.tools`.
 * Undefined when the token lacks the claim that names someone.
 */
export function principalForClaims(
  config: Pick<RunnerConfig, 'principals'>,
  oauth: OAuthConfig,
  claims: TokenClaims,
): Principal | undefined {
  const named = claims[oauth.principalClaim];
  if (typeof named !== 'string' || named.length === 0 || named.length > 500) return undefined;
  const subject = `${String(claims.iss)}|${named}`;
  const entry = config.principals.find((p) => p.oauthSubject === subject);
  if (entry) return { id: entry.id, roles: entry.roles, tools: entry.tools };
  const roles = new Set<Role>();
  if (oauth.rolesClaim) {
    const raw = claims[oauth.rolesClaim];
    const listed = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw.map(String) : [];
    for (const r of listed) if ((ROLES as string[]).includes(r)) roles.add(r as Role);
  }
  for (const scope of scopesOf(claims)) for (const r of oauth.scopeRoles?.[scope] ?? []) roles.add(r);
  return { id: `oauth:${named}`, roles: [...roles], tools: oauth.tools };
}

/** Does a bearer value look like a JWT (three base64url parts), so that it is checked as a token, not a key? */
export function looksLikeJwt(value: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value) && value.length <= 16_384;
}
