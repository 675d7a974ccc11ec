import { gunzipSync, gzipSync } from 'node:zlib';
import type { StoredResult } from '../core/result-record';

/**
 * A result whose JSON text in the record is longer than this is stored gzipped. DynamoDB bills a write unit
 * per KB of the item, so a 4 KB result (JSON an upstream returns compresses 3x or better) costs two or three
 * units fewer on every write of its record; below 1 KB there is nothing to win.
 */
export const GZIP_RESULT_ABOVE_BYTES = 1024;

/** A stored result as the item holds it: its JSON text as `jsonGzip` (binary) instead of `json` when large. */
type PackedResult = Omit<StoredResult, 'json'> & { json?: string; jsonGzip?: Uint8Array };
type WithOutcome = { outcome?: unknown };

function outcomeResult(item: WithOutcome): PackedResult | undefined {
  const outcome = item.outcome as { kind?: string; result?: PackedResult } | undefined;
  return outcome?.kind === 'succeeded' ? outcome.result : undefined;
}

function withResult<T extends WithOutcome>(item: T, result: PackedResult): T {
  return { ...item, outcome: { ...(item.outcome as object), result } };
}

/** The item as stored: a succeeded outcome's large result text gzipped. */
export function packResult<T extends WithOutcome>(item: T): T {
  const result = outcomeResult(item);
  if (result?.json === undefined || Buffer.byteLength(result.json) <= GZIP_RESULT_ABOVE_BYTES) return item;
  const { json, ...rest } = result;
  return withResult(item, { ...rest, jsonGzip: gzipSync(json) });
}

/** The item as read: `jsonGzip` back to `json`. */
export function unpackResult<T extends WithOutcome>(item: T): T {
  const result = outcomeResult(item);
  if (!result?.jsonGzip) return item;
  const { jsonGzip, ...rest } = result;
  return withResult(item, { ...rest, json: gunzipSync(jsonGzip).toString('utf8') });
}
