import { createHash } from 'node:crypto';
import { RunnerError } from './errors';

/**
 * How a tool's result is recorded: as canonical JSON text, made by a serializer that can neither hang nor
 * blow up the process (it stops at a size, a depth, a cycle or a value JSON cannot carry), then kept in the
 * record when small or in the blob store when large. The record keeps `{ bytes, sha256 }` either way.
 */
export const RESULT_LIMITS = {
  /** Results up to this many bytes stay in the operation record; larger ones go to the blob store. */
  inlineBytes: 64 * 1024,
  /** The largest result the runner records; a larger one is `invalid_output`. */
  maxRecordedBytes: 5 * 1024 * 1024,
  /** `maxResultBytes` when a tool spec leaves it out: the most the envelope carries. */
  defaultMaxResultBytes: 256 * 1024,
  /** The highest `maxResultBytes` a tool may declare: an envelope must fit Lambda's 6 MB response. */
  maxMaxResultBytes: 4 * 1024 * 1024,
  /** Nesting deeper than this is refused: JSON.stringify and the clients that read the envelope recurse. */
  maxDepth: 64,
} as const;

/** A recorded result: its size and hash always; its text in the record (`json`) or a blob store key (`ref`). */
export interface StoredResult {
  bytes: number;
  /** `sha256:<hex>` of the canonical JSON text. */
  sha256: string;
  json?: string;
  ref?: string;
  /** Over the tool's `maxResultBytes`: the envelope says `result_omitted` instead of carrying it. */
  omitted?: true;
}

export type Serialized = { ok: true; json: string; bytes: number; sha256: string } | { ok: false; message: string };

type Frame =
  | { kind: 'array'; value: readonly unknown[]; index: number; depth: number }
  | { kind: 'object'; value: Record<string, unknown>; keys: string[]; index: number; wrote: boolean; depth: number };

class Unserializable extends RunnerError {}

/** Same order as canonicalJson (core/canonical.ts): integer-like keys first, then the rest by code unit. */
function sortedKeys(value: object): string[] {
  const ordered: Record<string, true> = Object.create(null);
  for (const key of Object.keys(value).sort()) ordered[key] = true;
  return Object.keys(ordered);
}

/**
 * Canonical JSON of any value a tool may return, bounded: at most `maxBytes` of output, `maxDepth` levels,
 * no cycles, no BigInt. It walks with an explicit stack and emits as it goes, so a cyclic object, a sparse
 * array of a billion holes or a structure that doubles at each level stops at the bound instead of
 * freezing the process. `toJSON` is honoured as JSON.stringify does; functions, symbols and undefined are
 * left out of objects and become null in arrays, as JSON.stringify does. Getters that throw are caught.
 */
export function serializeBounded(value: unknown, maxBytes: number = RESULT_LIMITS.maxRecordedBytes): Serialized {
  const out: string[] = [];
  const failed = walkCanonical(value, maxBytes, (text) => out.push(text));
  if (failed) return failed;
  const json = out.join('');
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) return { ok: false, message: `the tool's output cannot be recorded: it is larger than ${describeBytes(maxBytes)}` };
  return { ok: true, json, bytes, sha256: `sha256:${createHash('sha256').update(json).digest('hex')}` };
}

/**
 * The size and hash of the canonical JSON `serializeBounded` would make, without holding it: for a result
 * too large to carry whole, whose `{ bytes, sha256 }` are still told (the `Tools` function's
 * `result_omitted`). Memory stays that of the walk, whatever the size, up to `maxBytes`.
 */
export function measureSerialized(
  value: unknown,
  maxBytes: number,
): { ok: true; bytes: number; sha256: string } | { ok: false; message: string } {
  const hash = createHash('sha256');
  let bytes = 0;
  const failed = walkCanonical(value, maxBytes, (text) => {
    bytes += Buffer.byteLength(text);
    hash.update(text);
  });
  if (failed) return failed;
  if (bytes > maxBytes) return { ok: false, message: `the tool's output cannot be recorded: it is larger than ${describeBytes(maxBytes)}` };
  return { ok: true, bytes, sha256: `sha256:${hash.digest('hex')}` };
}

/** The walk of `serializeBounded`, handing each piece of text to `sink` in order; the failure, if any. */
function walkCanonical(value: unknown, maxBytes: number, sink: (text: string) => void): { ok: false; message: string } | undefined {
  let length = 0;
  const stack: Frame[] = [];
  const onPath = new Set<object>();
  // An object's `"key":` waits for its value's first piece: a value the object leaves out emits nothing.
  let pendingKey = '';
  const emit = (text: string) => {
    length += pendingKey.length + text.length;
    if (length > maxBytes) throw new Unserializable(`it is larger than ${describeBytes(maxBytes)}`);
    if (pendingKey) sink(pendingKey);
    pendingKey = '';
    sink(text);
  };
  /** Writes a primitive, or opens a container; returns false for a value an object leaves out. */
  const write = (raw: unknown, key: string, depth: number, inArray: boolean): boolean => {
    let v = raw;
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function')
      v = (v as { toJSON(k: string): unknown }).toJSON(key);
    if (typeof v === 'bigint') throw new Unserializable('it holds a BigInt, which JSON cannot carry');
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') {
      if (inArray) emit('null');
      return inArray;
    }
    if (v === null || typeof v !== 'object') {
      emit(typeof v === 'number' && !Number.isFinite(v) ? 'null' : JSON.stringify(v));
      return true;
    }
    if (onPath.has(v)) throw new Unserializable('it refers to itself (a cycle)');
    if (depth >= RESULT_LIMITS.maxDepth) throw new Unserializable(`it is nested deeper than ${RESULT_LIMITS.maxDepth} levels`);
    onPath.add(v);
    if (Array.isArray(v)) {
      emit('[');
      stack.push({ kind: 'array', value: v, index: 0, depth: depth + 1 });
    } else {
      emit('{');
      stack.push({ kind: 'object', value: v as Record<string, unknown>, keys: sortedKeys(v), index: 0, wrote: false, depth: depth + 1 });
    }
    return true;
  };
  try {
    if (!write(value, '', 0, false)) return { ok: false, message: 'the tool returned nothing JSON can carry' };
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.kind === 'array') {
        if (top.index < top.value.length) {
          if (top.index > 0) emit(',');
          const i = top.index++;
          write(top.value[i], String(i), top.depth, true);
          continue;
        }
        emit(']');
      } else {
        if (top.index < top.keys.length) {
          const key = top.keys[top.index++];
          pendingKey = `${top.wrote ? ',' : ''}${JSON.stringify(key)}:`;
          if (write(top.value[key], key, top.depth, false)) top.wrote = true;
          pendingKey = '';
          continue;
        }
        emit('}');
      }
      onPath.delete(top.value);
      stack.pop();
    }
  } catch (error) {
    const why = error instanceof Unserializable ? error.message : `reading it failed (${(error as Error)?.name ?? 'error'})`;
    return { ok: false, message: `the tool's output cannot be recorded: ${why}` };
  }
  return undefined;
}

/** `5 MiB`, `256 KiB`, `100 bytes`. */
export function describeBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** The blob store key of an operation's result: one per attempt (or lookup), so a late result never overwrites another. */
export function resultBlobKey(operationId: string, label: string, sha256: string): string {
  return `results/${operationId}/${label}-${sha256.replace(/^sha256:/, '').slice(0, 16)}.json`;
}

/**
 * A value recorded as a result is: canonical JSON kept in the record, with its size and hash. For records
 * written before results were kept as text, and for tests; undefined for a value JSON cannot carry.
 */
export function storedResultOf(value: unknown, maxBytes: number = Number.MAX_SAFE_INTEGER): StoredResult | undefined {
  if (value === undefined) return undefined;
  const s = serializeBounded(value, maxBytes);
  return s.ok ? { bytes: s.bytes, sha256: s.sha256, json: s.json } : undefined;
}
