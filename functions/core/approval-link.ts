import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Approval links are signed per approver: HMAC over approvalId, approver, expiry and the frozen-args hash.
 * A link therefore approves exactly one version of one operation, for one person, until it expires.
 */
export interface LinkClaims {
  approvalId: string;
  approverId: string;
  expiresAt: number;
  inputHash: string;
}

function mac(secret: string, c: LinkClaims): string {
  return createHmac('sha256', secret).update(`${c.approvalId}\n${c.approverId}\n${c.expiresAt}\n${c.inputHash}`).digest('base64url');
}

export function signLink(secret: string, claims: LinkClaims): string {
  const payload = Buffer.from(JSON.stringify({ a: claims.approverId, e: claims.expiresAt })).toString('base64url');
  return `${payload}.${mac(secret, claims)}`;
}

export type LinkCheck = { ok: true; approverId: string; expiresAt: number } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

export function verifyLink(secret: string, sig: string, expected: { approvalId: string; inputHash: string }, now: number): LinkCheck {
  const [payload, given] = sig.split('.');
  if (!payload || !given) return { ok: false, reason: 'malformed' };
  let claims: { a?: unknown; e?: unknown };
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (typeof claims.a !== 'string' || typeof claims.e !== 'number') return { ok: false, reason: 'malformed' };
  const want = Buffer.from(mac(secret, { ...expected, approverId: claims.a, expiresAt: claims.e }));
  const got = Buffer.from(given);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'bad_signature' };
  if (now >= claims.e) return { ok: false, reason: 'expired' };
  return { ok: true, approverId: claims.a, expiresAt: claims.e };
}
