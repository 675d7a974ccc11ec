import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { RoleSchema } from './config';
import { deriveKey, KeyPurpose } from './keys';
import type { Role } from './model';
import { decodeJson, encodeJson } from './signed-token';

/**
 * Approval links are signed per approver: HMAC over approvalId, approver, expiry and the frozen-args hash.
 * A link therefore approves exactly one version of one operation, for one person, until it expires.
 * The HMAC key is the approval-links key derived from the configuration's secret (core/keys.ts), never the
 * secret itself, so no other purpose's key opens a link.
 */
export interface LinkClaims {
  approvalId: string;
  approverId: string;
  expiresAt: number;
  inputHash: string;
  /**
   * A token approver's roles (`oauth:<claim>`, which no config holds, so the link must say what it may do),
   * signed with the rest; absent for a config approver, whose roles are read from the config when it decides.
   */
  roles?: Role[];
}

function mac(configSecret: string, c: LinkClaims): string {
  // A config approver's line is what it always was (links already sent keep working); roles add a fifth
  // line, which no four-line input can equal (an input hash holds no newline).
  const roles = c.roles ? `\n${c.roles.join(' ')}` : '';
  return createHmac('sha256', deriveKey(configSecret, KeyPurpose.approvalLinks))
    .update(`${c.approvalId}\n${c.approverId}\n${c.expiresAt}\n${c.inputHash}${roles}`)
    .digest('base64url');
}

/** A link signature for one approver; `configSecret` is the configuration's `approvalSecret`. */
export function signLink(configSecret: string, claims: LinkClaims): string {
  const payload = encodeClaims({ a: claims.approverId, e: claims.expiresAt, ...(claims.roles ? { r: claims.roles } : {}) });
  return `${payload}.${mac(configSecret, claims)}`;
}

export type LinkCheck =
  | { ok: true; approverId: string; expiresAt: number; roles?: Role[] }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/** A SHA-256 HMAC in base64url is always 43 characters. */
const MAC_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const MAX_PAYLOAD_CHARS = 1024;

/** The payload's claims, exactly: a field more (or less) is not a link the runner signed. */
const ClaimsSchema = z.strictObject({
  a: z.string().min(1),
  e: z.number().int().refine(Number.isSafeInteger),
  r: z.array(RoleSchema).max(4).optional(),
});

function encodeClaims(claims: z.infer<typeof ClaimsSchema>): string {
  return encodeJson(claims.r ? { a: claims.a, e: claims.e, r: claims.r } : { a: claims.a, e: claims.e });
}

/**
 * The payload's claims, or undefined for anything but the one encoding `signLink` writes of exactly
 * `{ a: string, e: integer }` (with `r`, a list of roles, last for a token approver): no extra field, no
 * other key order, spacing or base64 variant, so one link has one spelling.
 */
function decodeClaims(payload: string): z.infer<typeof ClaimsSchema> | undefined {
  const claims = decodeJson(payload, ClaimsSchema, MAX_PAYLOAD_CHARS);
  return claims && encodeClaims(claims) === payload ? claims : undefined;
}

/**
 * Checks a link's signature: exactly `payload.mac`, nothing before or after, the MAC compared in
 * constant time. Any malformed input is a refusal, never an exception.
 */
export function verifyLink(configSecret: string, sig: string, expected: { approvalId: string; inputHash: string }, now: number): LinkCheck {
  const parts = sig.split('.');
  if (parts.length !== 2) return { ok: false, reason: 'malformed' };
  const [payload, given] = parts;
  if (!MAC_PATTERN.test(given)) return { ok: false, reason: 'malformed' };
  const claims = decodeClaims(payload);
  if (!claims) return { ok: false, reason: 'malformed' };
  const want = Buffer.from(mac(configSecret, { ...expected, approverId: claims.a, expiresAt: claims.e, roles: claims.r }));
  const got = Buffer.from(given);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'bad_signature' };
  if (now >= claims.e) return { ok: false, reason: 'expired' };
  return { ok: true, approverId: claims.a, expiresAt: claims.e, ...(claims.r ? { roles: claims.r } : {}) };
}
