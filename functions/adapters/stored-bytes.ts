/**
 * Values an item keeps as their bytes: a `sha256:<64 hex digits>` hash in 32 bytes (39 fewer than its
 * text), an `idk_<43 base64url>` idempotency key in 32 (15 fewer). DynamoDB bills a write unit per KB of
 * the item, and a record written with its result sits close to a KB boundary. Anything else is kept as it is.
 */
const HASH = /^sha256:([0-9a-f]{64})$/;
const KEY = /^idk_([A-Za-z0-9_-]{43})$/;

export function packHash<T>(value: T): T | Uint8Array {
  const hex = typeof value === 'string' ? HASH.exec(value)?.[1] : undefined;
  return hex ? Uint8Array.from(Buffer.from(hex, 'hex')) : value;
}

/** The text of a hash as `packHash` kept it; anything else as it is. */
export function unpackHash<T>(value: T | Uint8Array): T | string {
  return value instanceof Uint8Array && value.byteLength === 32 ? `sha256:${Buffer.from(value).toString('hex')}` : (value as T);
}

export function packKey<T>(value: T): T | Uint8Array {
  const text = typeof value === 'string' ? KEY.exec(value)?.[1] : undefined;
  if (!text) return value;
  const bytes = Buffer.from(text, 'base64url');
  // Only where the bytes give the same text back (43 characters can carry 2 bits no byte holds).
  return bytes.toString('base64url') === text ? Uint8Array.from(bytes) : value;
}

/** The text of a key as `packKey` kept it; anything else as it is. */
export function unpackKey<T>(value: T | Uint8Array): T | string {
  return value instanceof Uint8Array && value.byteLength === 32 ? `idk_${Buffer.from(value).toString('base64url')}` : (value as T);
}
