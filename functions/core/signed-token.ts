import { createHmac, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';

/**
 * Values handed to clients and read back: cursors (base64url JSON), and signed tokens (MCP session ids,
 * console session cookies): `<base64url JSON>.<HMAC-SHA256>` under a key derived for their purpose
 * (core/keys.ts). Reading never throws: anything malformed, oversized, tampered or off-schema is undefined.
 */

const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** An SHA-256 HMAC in base64url is always 43 characters. */
const MAC = /^[A-Za-z0-9_-]{43}$/;

/** base64url of a value's JSON. */
export function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The value a base64url JSON text carries, if it is at most `maxChars` long and fits `schema`. */
export function decodeJson<S extends z.ZodType>(text: string, schema: S, maxChars: number): z.infer<S> | undefined {
  if (text.length > maxChars || !BASE64URL.test(text)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/** The HMAC of `label` and `value` under `key`, base64url; the label separates uses of one key. */
export function macOf(key: Buffer, label: string, value: string): string {
  return createHmac('sha256', key).update(`${label}\n${value}`).digest('base64url');
}

/** A token carrying `claims`, signed under `key` for `label`. */
export function signToken(key: Buffer, label: string, claims: unknown): string {
  const payload = encodeJson(claims);
  return `${payload}.${macOf(key, label, payload)}`;
}

/** The claims of a token signed under `key` for `label`, compared in constant time; undefined for anything else. */
export function verifyToken<S extends z.ZodType>(
  key: Buffer,
  label: string,
  token: string,
  schema: S,
  maxChars: number,
): z.infer<S> | undefined {
  if (token.length > maxChars) return undefined;
  const parts = token.split('.');
  if (parts.length !== 2) return undefined;
  const [payload, given] = parts;
  if (!BASE64URL.test(payload) || !MAC.test(given)) return undefined;
  if (!timingSafeEqual(Buffer.from(macOf(key, label, payload)), Buffer.from(given))) return undefined;
  return decodeJson(payload, schema, maxChars);
}
