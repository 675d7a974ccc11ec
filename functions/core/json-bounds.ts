/**
 * The one place that bounds what a request may carry: nesting depth, ids, number range and key names.
 * Everything here is iterative (an explicit stack, never recursion), so a hostile document cannot
 * overflow the call stack, and it runs before anything reaches the store.
 */
export const JSON_BOUNDS = {
  /** DynamoDB stores at most 32 levels of nesting; a request body (its own object included) gets no more. */
  maxDepth: 32,
  /** Every id the API issues is far shorter; DynamoDB refuses keys over 2048 bytes with a server error. */
  maxIdLength: 128,
  /** Keys longer than this are never a tool's argument name; DynamoDB's own limit is 64 KiB. */
  maxKeyLength: 1024,
  /**
   * Tool-call arguments are stored twice on one DynamoDB item (as sent, and frozen after validation);
   * an item holds at most 400 KB, so each copy gets at most 128 KiB.
   */
  maxArgumentsBytes: 128 * 1024,
  /** Below this magnitude DynamoDB cannot store a number (its range is 1e-130 to 1e126). */
  minNonZeroMagnitude: 1e-130,
} as const;

/**
 * Keys that mean something to JavaScript's object model. `__proto__` is silently dropped or turned into a
 * prototype by ordinary object code, so two different payloads would look alike; `constructor` and
 * `prototype` are where prototype pollution starts. The empty key is refused by DynamoDB. No tool's
 * argument schema needs any of them, so they are refused rather than half-supported.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype', '']);

export type BoundsCheck = { ok: true } | { ok: false; message: string };
export type BoundedParse = { ok: true; value: unknown } | { ok: false; reason: 'syntax' | 'bounds'; message: string };

const ID_PATTERN = /^[A-Za-z0-9_-]+$/;

/** Ids in paths: the characters the API issues and a sane length; anything else can name nothing. */
export function isSaneId(value: string | undefined): value is string {
  return value !== undefined && value.length >= 1 && value.length <= JSON_BOUNDS.maxIdLength && ID_PATTERN.test(value);
}

/**
 * Deepest nesting of arrays and objects in JSON text, found without parsing (strings and escapes are
 * skipped), so a document nested 100,000 deep is refused before JSON.parse or any walk sees it.
 * Stops counting as soon as `limit` is passed.
 */
export function nestingDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: the next character is escaped
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return deepest;
}

/** Why a number cannot travel faithfully (hash, DynamoDB, the tool), or undefined when it can. */
export function numberProblem(n: number): string | undefined {
  if (!Number.isFinite(n)) return 'is outside the range of a double';
  if (Math.abs(n) > Number.MAX_SAFE_INTEGER) return 'is beyond the safe integer range (send large numbers as strings)';
  if (n !== 0 && Math.abs(n) < JSON_BOUNDS.minNonZeroMagnitude) return 'is too small to store (send it as a string)';
  return undefined;
}

function pathText(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'body';
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : /^[A-Za-z_$][\w$]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p.slice(0, 40))}]`))
    .join('')
    .replace(/^\./, '');
}

/**
 * Checks an already-parsed value: depth, key names and lengths, number range. Iterative; the first
 * problem found is reported with its path (keys shortened, never the offending value itself).
 */
export function checkJsonBounds(
  value: unknown,
  basePath: readonly (string | number)[] = [],
  maxDepth: number = JSON_BOUNDS.maxDepth,
): BoundsCheck {
  const stack: { value: unknown; path: (string | number)[]; depth: number }[] = [{ value, path: [...basePath], depth: 0 }];
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (typeof v === 'number') {
      const problem = numberProblem(v);
      if (problem) return { ok: false, message: `${pathText(path)}: the number ${problem}` };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > maxDepth) return { ok: false, message: `${pathText(path)}: nested deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, i], depth: depth + 1 });
      continue;
    }
    for (const key of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(key)) return { ok: false, message: `${pathText(path)}: the key ${JSON.stringify(key)} is not allowed` };
      if (key.length > JSON_BOUNDS.maxKeyLength)
        return { ok: false, message: `${pathText(path)}: a key is longer than ${JSON_BOUNDS.maxKeyLength} characters` };
      stack.push({ value: (v as Record<string, unknown>)[key], path: [...path, key], depth: depth + 1 });
    }
  }
  return { ok: true };
}

/**
 * JSON.parse with bounds: the depth is checked on the text first (no deep structure is ever built),
 * then the parsed value is checked. `syntax` means the text is not JSON; `bounds` that it is, but hostile.
 */
export function parseBoundedJson(
  text: string,
  basePath: readonly (string | number)[] = [],
  maxDepth: number = JSON_BOUNDS.maxDepth,
): BoundedParse {
  if (nestingDepth(text, maxDepth) > maxDepth)
    return { ok: false, reason: 'bounds', message: `${pathText(basePath)}: nested deeper than ${maxDepth} levels` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'syntax', message: `${pathText(basePath)}: not valid JSON` };
  }
  const check = checkJsonBounds(value, basePath, maxDepth);
  return check.ok ? { ok: true, value } : { ok: false, reason: 'bounds', message: check.message };
}
