import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { OAuthConfig, RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';
import { principalForClaims, tokenRefusal } from '../core/oauth-principal';
import { RunnerError } from '../core/errors';

/**
 * Access tokens from the configured issuer, verified with `jose`: a signature from the issuer's JWKS (RS256
 * or ES256 only: never `none`, never an HMAC, whose key would be public), that `iss`, unexpired and past
 * `nbf` with 60 s of clock skew. The JWKS is found through the issuer's metadata (or `jwksUri`) and cached by
 * `jose`, which fetches it again when a token names a key it does not know (at most every 30 s).
 *
 * A failed discovery or JWKS fetch starts a cooldown of 30 s for that issuer: until it ends, nothing is
 * fetched from it, and a token that would need a fetch is refused at once (fail closed). Without it every
 * request bearing a token would fetch again, and a hanging issuer would hold each of them for the timeout.
 */

const ALGORITHMS = ['RS256', 'ES256'];
const CLOCK_SKEW_SECONDS = 60;
const FETCH_TIMEOUT_MS = 5_000;
const ISSUER_COOLDOWN_MS = 30_000;

/** What this process knows of one issuer (and JWKS URL): its key set once found, and when a fetch last failed. */
interface IssuerState {
  keySet?: Promise<JWTVerifyGetKey>;
  failedAt?: number;
}

/** A cache per process, rebuilt after a restart. */
const issuers = new Map<string, IssuerState>();

function coolingDown(state: IssuerState): boolean {
  return state.failedAt !== undefined && Date.now() - state.failedAt < ISSUER_COOLDOWN_MS;
}

class IssuerCoolingDownError extends RunnerError {
  constructor(issuer: string) {
    super(
      `a fetch from the issuer ${issuer} failed less than ${ISSUER_COOLDOWN_MS / 1000} s ago: tokens that need one are refused until then`,
    );
  }
}

/**
 * A fetch from the issuer that counts as failed unless it answers 200 with what was asked for (a failure
 * starts the cooldown), and that does not happen at all during one. `notFound`: a 404 is an answer (undefined).
 */
async function fetchFromIssuer(
  state: IssuerState,
  oauth: OAuthConfig,
  url: string,
  init: RequestInit,
  valid: (body: unknown) => boolean,
  notFound: 'answer' | 'failure' = 'failure',
): Promise<Response | undefined> {
  if (coolingDown(state)) throw new IssuerCoolingDownError(oauth.issuer);
  try {
    const res = await fetch(url, init);
    if (res.status === 404 && notFound === 'answer') return undefined;
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    const text = await res.text();
    if (!valid(JSON.parse(text))) throw new Error(`${url} answered something other than was asked for`);
    return new Response(text, { status: 200, headers: res.headers });
  } catch (error) {
    state.failedAt = Date.now();
    throw error;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

async function jwksUriOf(state: IssuerState, oauth: OAuthConfig): Promise<string> {
  if (oauth.jwksUri) return oauth.jwksUri;
  const base = oauth.issuer.replace(/\/$/, '');
  // Only a 404 (an issuer that publishes the other document) tries the next path; any other failure ends the
  // discovery, so a hanging issuer is waited for once, not once per path.
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const init = { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) };
    const res = await fetchFromIssuer(state, oauth, `${base}${path}`, init, isObject, 'answer');
    const metadata = (await res?.json()) as { jwks_uri?: unknown } | undefined;
    if (typeof metadata?.jwks_uri === 'string') return metadata.jwks_uri;
  }
  state.failedAt = Date.now();
  throw new Error(`no JWKS found for the issuer ${oauth.issuer} (its metadata names no jwks_uri)`);
}

/** The issuer's key set: found once, or refused at once while a failed discovery cools down. */
function keySetOf(oauth: OAuthConfig): Promise<JWTVerifyGetKey> {
  const id = `${oauth.issuer}\n${oauth.jwksUri ?? ''}`;
  const found = issuers.get(id) ?? {};
  issuers.set(id, found);
  if (found.keySet) return found.keySet;
  if (coolingDown(found)) return Promise.reject(new IssuerCoolingDownError(oauth.issuer));
  const keySet = jwksUriOf(found, oauth).then((uri) =>
    createRemoteJWKSet(new URL(uri), {
      cooldownDuration: ISSUER_COOLDOWN_MS,
      timeoutDuration: FETCH_TIMEOUT_MS,
      // Every JWKS fetch jose makes goes through the cooldown.
      [customFetch]: async (url: string, init: RequestInit) =>
        (await fetchFromIssuer(
          found,
          oauth,
          url,
          init,
          (body) => isObject(body) && Array.isArray(body.keys) && body.keys.every(isObject),
        ))!,
    }),
  );
  found.keySet = keySet;
  // A failed discovery is remembered (its cooldown runs), not its promise: after the cooldown, one more try.
  keySet.catch(() => {
    if (found.keySet === keySet) found.keySet = undefined;
  });
  return keySet;
}

export type TokenCheck = { ok: true; principal: Principal; expiresAt: number } | { ok: false; reason: string };

/** Verifies an access token and maps it to its principal; a refusal says why (for logs, never for the caller). */
export async function verifyAccessToken(config: RunnerConfig, token: string, resourceUrls: string[]): Promise<TokenCheck> {
  const oauth = config.oauth;
  if (!oauth) return { ok: false, reason: 'no OAuth issuer is configured' };
  try {
    const { payload, protectedHeader } = await jwtVerify(token, await keySetOf(oauth), {
      issuer: oauth.issuer,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ['exp'],
    });
    const refusal = tokenRefusal(payload, oauth, resourceUrls, protectedHeader);
    if (refusal) return { ok: false, reason: refusal };
    const principal = principalForClaims(config, oauth, payload);
    if (!principal) return { ok: false, reason: `the token has no ${oauth.principalClaim} claim` };
    return { ok: true, principal, expiresAt: (payload.exp as number) * 1000 };
  } catch (error) {
    const reason = error instanceof errors.JOSEError ? error.code : (error as Error).message;
    return { ok: false, reason };
  }
}
