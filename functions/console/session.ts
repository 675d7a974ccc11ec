import { randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { RunnerConfig } from '../core/config';
import { deriveKey, KeyPurpose } from '../core/keys';
import { macOf, signToken, verifyToken } from '../core/signed-token';

/**
 * A console session is a signed cookie, kept in no process's memory (behind API Gateway each request may
 * reach another Lambda container). It names the principal and carries a fingerprint of the principal's
 * key, never the key: the console acts with the key the principals document holds now, so a session ends
 * as soon as its principal's key changes or the principal is removed, and after `SESSION_LIFETIME_SECONDS`
 * at the latest. It is signed with the console-sessions key derived from the configuration's secret
 * (core/keys.ts), so changing that secret ends every session too. Signing out clears the cookie.
 */

/** Eight hours: a working day, after which a person signs in again. */
export const SESSION_LIFETIME_SECONDS = 8 * 3600;

export interface Session {
  principalId: string;
  /** Random per sign-in: what the session's CSRF token is derived from. */
  nonce: string;
  issuedAt: number;
  expiresAt: number;
}

const VERSION = 1;
/** A session opened with an access token carries the token (the console acts with it) instead of a key fingerprint. */
const TOKEN_VERSION = 2;
/** Browsers keep cookies up to about 4 KB: a token session holds the token, so it may be that long. */
const MAX_COOKIE_CHARS = 4000;
/** The longest access token a console session can hold within that. */
export const MAX_SESSION_TOKEN_CHARS = 2600;

const common = {
  p: z.string().min(1).max(500),
  n: z.string().min(1).max(64),
  t: z.number().int().min(0),
  e: z.number().int().min(0),
};
const PayloadSchema = z.union([
  z.strictObject({ v: z.literal(VERSION), f: z.string().min(1).max(64), ...common }),
  z.strictObject({ v: z.literal(TOKEN_VERSION), tk: z.string().min(1).max(MAX_SESSION_TOKEN_CHARS), ...common }),
]);

const key = (configSecret: string) => deriveKey(configSecret, KeyPurpose.consoleSessions);

function hmac(configSecret: string, label: string, value: string): string {
  return macOf(key(configSecret), label, value);
}

/** Which key a session was opened with, without the key: an HMAC under the console-sessions key. */
function keyFingerprint(configSecret: string, key: string): string {
  return hmac(configSecret, 'principal-key', key).slice(0, 32);
}

/** A new session cookie value for the principal whose key is `key`. */
export function issueSession(configSecret: string, principal: { id: string; key: string }, nowMs: number): string {
  const t = Math.floor(nowMs / 1000);
  return signToken(key(configSecret), 'session', {
    v: VERSION,
    p: principal.id,
    f: keyFingerprint(configSecret, principal.key),
    n: randomBytes(16).toString('base64url'),
    t,
    e: t + SESSION_LIFETIME_SECONDS,
  });
}

/**
 * A new session cookie value for a person who signed in with an access token: it ends when the token expires
 * (or after `SESSION_LIFETIME_SECONDS`, whichever is first), and the console acts with that token.
 */
export function issueTokenSession(
  configSecret: string,
  principalId: string,
  token: string,
  tokenExpiresAtMs: number,
  nowMs: number,
): string {
  const t = Math.floor(nowMs / 1000);
  return signToken(key(configSecret), 'session', {
    v: TOKEN_VERSION,
    p: principalId,
    tk: token,
    n: randomBytes(16).toString('base64url'),
    t,
    e: Math.min(t + SESSION_LIFETIME_SECONDS, Math.floor(tokenExpiresAtMs / 1000)),
  });
}

/** What a valid session holds: the principals document's entry for a key session, the token for a token session. */
export type SessionFound =
  | { session: Session; kind: 'key'; principal: RunnerConfig['principals'][number] & { key: string } }
  | { session: Session; kind: 'token'; token: string };

/**
 * The session a cookie value carries, if this deployment signed it and it has not expired: for a key session,
 * only while its principal still exists with the very key it signed in with; a token session's token is
 * checked again by the caller on every request. Otherwise undefined. Never throws.
 */
export function verifySession(
  config: RunnerConfig & { approvalSecret: string },
  value: string | undefined,
  nowMs: number,
): SessionFound | undefined {
  const claims = value ? verifyToken(key(config.approvalSecret), 'session', value, PayloadSchema, MAX_COOKIE_CHARS) : undefined;
  if (!claims || claims.e * 1000 <= nowMs) return undefined;
  const session = { principalId: claims.p, nonce: claims.n, issuedAt: claims.t, expiresAt: claims.e };
  if (claims.v === TOKEN_VERSION) return { session, kind: 'token', token: claims.tk };
  const principal = config.principals.find((p) => p.id === claims.p);
  if (!principal?.key) return undefined;
  const current = Buffer.from(keyFingerprint(config.approvalSecret, principal.key));
  const signedIn = Buffer.from(claims.f);
  if (current.length !== signedIn.length || !timingSafeEqual(current, signedIn)) return undefined;
  return { session, kind: 'key', principal: { ...principal, key: principal.key } };
}

/** The session's CSRF token, which every console form carries: derived, so nothing is stored. */
export function csrfToken(configSecret: string, session: Session): string {
  return hmac(configSecret, 'csrf', session.nonce);
}

/** Whether a form's token is this session's, in constant time. */
export function csrfTokenMatches(configSecret: string, session: Session, given: unknown): boolean {
  if (typeof given !== 'string' || given.length > 100) return false;
  const want = Buffer.from(csrfToken(configSecret, session));
  const got = Buffer.from(given);
  return want.length === got.length && timingSafeEqual(want, got);
}
