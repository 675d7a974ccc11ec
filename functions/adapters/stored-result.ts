import { gunzipSync, gzipSync } from 'node:zlib';
import type { StoredResult } from '../core/result-record';
import { packHash, unpackHash } from './stored-bytes';

/**
 * A result whose JSON text in the record is longer than this is stored gzipped. DynamoDB bills a write unit
 * per KB of the item, so a 4 KB result (JSON an upstream returns compresses 3x or better) costs two or three
 * units fewer on every write of its record; below 1 KB there is nothing to win.
 */
export const GZIP_RESULT_ABOVE_BYTES = 1024;

/** A stored result as the item holds it: its JSON text as `jsonGzip` (binary) instead of `json` when large, its hash as bytes. */
type PackedResult = Omit<StoredResult, 'json' | 'sha256'> & { json?: string; jsonGzip?: Uint8Array; sha256: string | Uint8Array };
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
  if (!result) return item;
  const packed = { ...result, sha256: packHash(result.sha256) };
  if (packed.json === undefined || Buffer.byteLength(packed.json) <= GZIP_RESULT_ABOVE_BYTES) return withResult(item, packed);
  const { json, ...rest } = packed;
  return withResult(item, { ...rest, jsonGzip: gzipSync(json, { level: 9 }) });
}

/** The item as read: `jsonGzip` back to `json`, the hash back to its text. */
export function unpackResult<T extends WithOutcome>(item: T): T {
  const result = outcomeResult(item);
  if (!result) return item;
  const unpacked = { ...result, sha256: unpackHash(result.sha256) };
  if (!unpacked.jsonGzip) return withResult(item, unpacked);
  const { jsonGzip, ...rest } = unpacked;
  return withResult(item, { ...rest, json: gunzipSync(jsonGzip).toString('utf8') });
}
