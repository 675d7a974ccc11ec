import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth: equal values always give equal text and hash. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

export function hashValue(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** Deep-freezes a parsed value so no step can change arguments after they were hashed. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

export type ParsedArguments = { ok: true; value: unknown } | { ok: false; message: string };

/** Tool-call arguments arrive as an object or as the JSON string most providers emit. */
export function parseArguments(raw: unknown): ParsedArguments {
  if (typeof raw !== 'string') return { ok: true, value: raw };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return { ok: false, message: 'arguments is not valid JSON' };
  }
}
