import { gunzipSync, gzipSync } from 'node:zlib';
import type { OperationRecord } from '../core/model';

/**
 * A result whose JSON is longer than this is stored gzipped. DynamoDB bills a write unit per KB of the item,
 * so a 4 KB result (JSON an upstream returns compresses 3x or better) costs two or three units fewer on
 * every write of its record; below 1 KB there is nothing to win.
 */
export const GZIP_RESULT_ABOVE_BYTES = 1024;

type StoredOutcome = NonNullable<OperationRecord['outcome']> & { result?: unknown; resultGzip?: Uint8Array };

/** The record as stored: a succeeded outcome's large result as `resultGzip` (binary) instead of `result`. */
export function packResult(op: OperationRecord): OperationRecord {
  const outcome = op.outcome as StoredOutcome | undefined;
  if (outcome?.kind !== 'succeeded' || outcome.result === undefined) return op;
  const json = JSON.stringify(outcome.result);
  if (Buffer.byteLength(json) <= GZIP_RESULT_ABOVE_BYTES) return op;
  const { result: _result, ...rest } = outcome;
  return { ...op, outcome: { ...rest, resultGzip: gzipSync(json) } as unknown as OperationRecord['outcome'] };
}

/** The record as read: `resultGzip` back to `result`. */
export function unpackResult(op: OperationRecord): OperationRecord {
  const outcome = op.outcome as StoredOutcome | undefined;
  if (!outcome?.resultGzip) return op;
  const { resultGzip, ...rest } = outcome;
  return { ...op, outcome: { ...rest, result: JSON.parse(gunzipSync(resultGzip).toString('utf8')) } as OperationRecord['outcome'] };
}
