import { gunzipSync } from 'node:zlib';
import type { StoredResult } from '../core/result-record';
import { unpackHash } from './stored-bytes';

/**
 * How items of format 2 kept a result (dynamo-operation-items.ts writes format 3, whose body is deflated whole):
 * a result whose JSON text was over 1 KB as `jsonGzip` (binary) instead of `json`, its hash as bytes.
 */
type PackedResult = Omit<StoredResult, 'json' | 'sha256'> & { json?: string; jsonGzip?: Uint8Array; sha256: string | Uint8Array };
type WithOutcome = { outcome?: unknown };

function outcomeResult(item: WithOutcome): PackedResult | undefined {
  const outcome = item.outcome as { kind?: string; result?: PackedResult } | undefined;
  return outcome?.kind === 'succeeded' ? outcome.result : undefined;
}

function withResult<T extends WithOutcome>(item: T, result: PackedResult): T {
  return { ...item, outcome: { ...(item.outcome as object), result } };
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
