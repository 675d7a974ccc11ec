import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How an approver's webhook receiver knows a POST came from this runner: the header
 * `Toolrunner-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with that approver's
 * own `notify.secret` from the principals document. Never the key that signs approval links: every receiver
 * holds its secret, and with the links' key a receiver could forge another approver's link.
 * The timestamp is signed with the body, so a captured request cannot be replayed after the tolerance.
 */
export const WEBHOOK_SIGNATURE_HEADER = 'Toolrunner-Signature';

/** How old a signature a receiver accepts by default: five minutes, as Stripe's libraries do. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

function hmacHex(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The header value for `body` sent at `nowMs` (the runner signs each attempt afresh). */
export function signWebhookBody(secret: string, body: string, nowMs: number): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${hmacHex(secret, t, body)}`;
}

export type WebhookCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'no_secret' | 'missing' | 'malformed' | 'stale' | 'mismatch' };

const HEX_SHA256 = /^[0-9a-f]{64}$/;

/**
 * For receivers: checks `Toolrunner-Signature` against the raw request body (exactly the bytes received,
 * before any JSON parsing) and the approver's `notify.secret`. A signature is accepted when any `v1` in
 * the header matches and its `t` is within `toleranceSeconds` of `nowMs`. Compares in constant time;
 * never throws. An empty or missing secret verifies nothing (`no_secret`): anyone can compute an HMAC
 * keyed with the empty string, so a receiver whose secret did not load must refuse every request.
 */
export function verifyWebhookSignature(input: {
  /** The approver's `notify.secret`; typed loosely because receivers read it from their environment. */
  secret: string | undefined;
  body: string;
  header: string | null | undefined;
  nowMs?: number;
  toleranceSeconds?: number;
}): WebhookCheck {
  if (typeof input.secret !== 'string' || input.secret.length === 0) return { ok: false, reason: 'no_secret' };
  if (!input.header) return { ok: false, reason: 'missing' };
  if (input.header.length > 1024) return { ok: false, reason: 'malformed' };
  let t: number | undefined;
  const signatures: string[] = [];
  for (const part of input.header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return { ok: false, reason: 'malformed' };
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (key === 'v1' && HEX_SHA256.test(value)) signatures.push(value);
  }
  if (t === undefined || signatures.length === 0) return { ok: false, reason: 'malformed' };
  const now = Math.floor((input.nowMs ?? Date.now()) / 1000);
  if (Math.abs(now - t) > (input.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS)) return { ok: false, reason: 'stale' };
  const want = Buffer.from(hmacHex(input.secret, t, input.body), 'hex');
  const matches = signatures.some((given) => timingSafeEqual(want, Buffer.from(given, 'hex')));
  return matches ? { ok: true, timestamp: t } : { ok: false, reason: 'mismatch' };
}
