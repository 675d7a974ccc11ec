import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { deriveKey, KeyPurpose } from '../core/keys';
import { signToken, verifyToken } from '../core/signed-token';

/**
 * An `Mcp-Session-Id` is the session itself: a signed reference to the session's run and principal, so any
 * process that verifies it serves the session (behind API Gateway consecutive requests reach different
 * Lambda containers), also after a restart. It is signed, not encrypted: the run id is no secret (the
 * initialize answer names it in `Toolrunner-Run-Id`), and the id alone grants nothing without the
 * principal's bearer key. The key is the MCP-sessions key derived from the configuration's secret.
 */
export interface SessionClaims {
  runId: string;
  principalId: string;
  /** Random per `initialize`: two sessions on one run never share an id, so their derived callIds differ. */
  nonce: string;
  /** Seconds since the epoch, for logs and for telling sessions apart; sessions do not expire (the run does). */
  issuedAt: number;
}

const VERSION = 1;
/** Far above any id this module issues (run ids and principal ids are short); anything longer is refused unread. */
const MAX_ID_CHARS = 2048;

const PayloadSchema = z.strictObject({
  v: z.literal(VERSION),
  r: z.string().min(1).max(200),
  p: z.string().min(1).max(500),
  n: z.string().min(1).max(64),
  t: z.number().int().min(0),
});

const key = (configSecret: string) => deriveKey(configSecret, KeyPurpose.mcpSessions);

/** A new session id for a run and its principal, signed with the MCP-sessions key of `configSecret`. */
export function issueSessionId(configSecret: string, session: { runId: string; principalId: string }, now: number): string {
  return signToken(key(configSecret), 'mcp-session', {
    v: VERSION,
    r: session.runId,
    p: session.principalId,
    n: randomBytes(12).toString('base64url'),
    t: Math.floor(now / 1000),
  });
}

/**
 * The claims of a session id this deployment issued, or undefined for anything else (tampered, signed with
 * another key or for another purpose, malformed). Never throws; the MAC is compared in constant time.
 */
export function verifySessionId(configSecret: string, id: string): SessionClaims | undefined {
  const claims = verifyToken(key(configSecret), 'mcp-session', id, PayloadSchema, MAX_ID_CHARS);
  return claims && { runId: claims.r, principalId: claims.p, nonce: claims.n, issuedAt: claims.t };
}
