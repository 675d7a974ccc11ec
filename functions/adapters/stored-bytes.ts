/**
 * Values an item keeps as their bytes: a `sha256:<64 hex digits>` hash in 32 bytes (39 fewer than its text),
 * as an operation item's `argumentsRef` holds it. Items of format 2 kept every hash, and the idempotency key
 * (`idk_<43 base64url>`), so; format 3 deflates them with the rest of the record. Anything else is kept as it is.
 */
const HASH = /^sha256:([0-9a-f]{64})$/;

export function packHash<T>(value: T): T | Uint8Array {
  const hex = typeof value === 'string' ? HASH.exec(value)?.[1] : undefined;
  return hex ? Uint8Array.from(Buffer.from(hex, 'hex')) : value;
}

/** The text of a hash as `packHash` kept it; anything else as it is. */
export function unpackHash<T>(value: T | Uint8Array): T | string {
  return value instanceof Uint8Array && value.byteLength === 32 ? `sha256:${Buffer.from(value).toString('hex')}` : (value as T);
}

/** The text of a key as items of format 2 kept it (its 32 bytes); anything else as it is. */
export function unpackKey<T>(value: T | Uint8Array): T | string {
  return value instanceof Uint8Array && value.byteLength === 32 ? `idk_${Buffer.from(value).toString('base64url')}` : (value as T);
}
