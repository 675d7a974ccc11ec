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
const MAX_COOKIE_CHARS = 2048;

const PayloadSchema = z.strictObject({
  v: z.literal(VERSION),
  p: z.string().min(1).max(500),
  f: z.string().min(1).max(64),
  n: z.string().min(1).max(64),
  t: z.number().int().min(0),
  e: z.number().int().min(0),
});

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
 * The session a cookie value carries, if this deployment signed it, it has not expired and its principal
 * still exists with the very key it signed in with; otherwise undefined. Never throws.
 */
export function verifySession(
  config: RunnerConfig & { approvalSecret: string },
  value: string | undefined,
  nowMs: number,
): { session: Session; principal: RunnerConfig['principals'][number] } | undefined {
  const claims = value ? verifyToken(key(config.approvalSecret), 'session', value, PayloadSchema, MAX_COOKIE_CHARS) : undefined;
  if (!claims || claims.e * 1000 <= nowMs) return undefined;
  const principal = config.principals.find((p) => p.id === claims.p);
  if (!principal) return undefined;
  const current = Buffer.from(keyFingerprint(config.approvalSecret, principal.key));
  const signedIn = Buffer.from(claims.f);
  if (current.length !== signedIn.length || !timingSafeEqual(current, signedIn)) return undefined;
  return {
    session: { principalId: principal.id, nonce: claims.n, issuedAt: claims.t, expiresAt: claims.e },
    principal,
  };
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
