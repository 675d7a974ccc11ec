import { createHash } from 'node:crypto';

type Frame = { text: string } | { value: unknown };

/**
 * The key order of a plain object whose keys were inserted sorted: integer-like keys first in numeric
 * order, then the rest sorted by code unit. This is the order the first version produced (it built a
 * fresh object with sorted keys), so hashes already stored stay valid. The null prototype keeps
 * `__proto__` an ordinary key instead of a prototype setter.
 */
function canonicalKeyOrder(value: object): string[] {
  const ordered: Record<string, true> = Object.create(null);
  for (const key of Object.keys(value).sort()) ordered[key] = true;
  return Object.keys(ordered);
}

function isSkipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

/**
 * JSON with object keys sorted at every depth: equal values always give equal text and hash.
 * Iterative (an explicit stack), so no nesting depth can overflow the call stack, and every own key
 * counts, `__proto__` included, so different payloads never hash alike.
 */
export function canonicalJson(value: unknown): string {
  if (isSkipped(value)) return JSON.stringify(value);
  const out: string[] = [];
  const stack: Frame[] = [{ value }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ('text' in frame) {
      out.push(frame.text);
      continue;
    }
    const v = frame.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
      continue;
    }
    const frames: Frame[] = [];
    if (Array.isArray(v)) {
      frames.push({ text: '[' });
      v.forEach((item, i) => {
        if (i > 0) frames.push({ text: ',' });
        frames.push(isSkipped(item) ? { text: 'null' } : { value: item });
      });
      frames.push({ text: ']' });
    } else {
      frames.push({ text: '{' });
      let first = true;
      for (const key of canonicalKeyOrder(v)) {
        const item = (v as Record<string, unknown>)[key];
        if (isSkipped(item)) continue;
        frames.push({ text: `${first ? '' : ','}${JSON.stringify(key)}:` }, { value: item });
        first = false;
      }
      frames.push({ text: '}' });
    }
    for (let i = frames.length - 1; i >= 0; i--) stack.push(frames[i]);
  }
  return out.join('');
}

export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

export function hashValue(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** Deep-freezes a parsed value so no step can change arguments after they were hashed (iterative). */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  const seen = new WeakSet<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if (v && typeof v === 'object' && !seen.has(v)) {
      seen.add(v);
      Object.freeze(v);
      for (const child of Object.values(v)) stack.push(child);
    }
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
