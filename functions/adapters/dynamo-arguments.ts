import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { OperationRecord } from '../core/model';
import type { BlobStore } from '../core/ports';
import { RESULT_LIMITS } from '../core/result-record';

/** Where an operation's large arguments are kept: inline, in an item of their own, or in the blob store. */

/** Arguments over this size live in the blob store (where there is one); the record keeps `{ bytes, sha256, ref }`. */
const INLINE_ARGUMENTS_BYTES = RESULT_LIMITS.inlineBytes;
/**
 * Arguments of this size or more live in an item of their own, written once (gzipped where that is
 * smaller), beside the operation in its table. With them inline a record of about 600 bytes crosses 1 KB,
 * and it is written twice (in the creating transaction, where items count double, and with its result):
 * 1 KB of arguments costs 3 write units there, 1 in an item of their own.
 */
const SEPARATE_ARGUMENTS_BYTES = 512;

/** Where an item's large arguments went: which field, its size and hash, and the key they are kept under. */
export interface ArgumentsRef {
  field: 'frozenArguments' | 'rawArguments';
  bytes: number;
  sha256: string;
  ref: string;
  /** `item`: an item of the operations table keyed `ref`; absent: the blob store. */
  in?: 'item';
}

/** Arguments kept in items of their own, expiring with their operation. */
export interface ArgumentItems {
  put(ref: string, text: string, expiresAtEpoch: number | undefined): Promise<void>;
  get(ref: string): Promise<string | undefined>;
}

/**
 * Where an item's arguments are kept and read back from; and, for each record this store handed out, where
 * its arguments were (null: inline), so a write of the same arguments again is skipped.
 */
export interface ArgumentSources {
  blobs: BlobStore | undefined;
  items: ArgumentItems;
  placed: WeakMap<OperationRecord, ArgumentsRef | null>;
}

/**
 * Where a record's arguments are kept: inline when small, else in an item of their own, or over 64 KiB in
 * the blob store, so no item can reach DynamoDB's 400 KB. Written once, when they first appear (the key
 * names their hash, so other arguments never overwrite them), before the record that points at them.
 */
export function placeArguments(
  op: OperationRecord,
  before: OperationRecord | undefined,
  sources: ArgumentSources,
): { ref?: ArgumentsRef; write: () => Promise<void> } {
  const none = { write: async () => undefined };
  const field = op.frozenArguments !== undefined ? 'frozenArguments' : op.rawArguments !== undefined ? 'rawArguments' : undefined;
  const text = field && op[field];
  if (!field || text === undefined) return none;
  const bytes = Buffer.byteLength(text);
  if (bytes < SEPARATE_ARGUMENTS_BYTES) return none;
  const sha256 = `sha256:${createHash('sha256').update(text).digest('hex')}`;
  const kind = field === 'frozenArguments' ? 'frozen' : 'raw';
  const ref: ArgumentsRef =
    bytes > INLINE_ARGUMENTS_BYTES && sources.blobs
      ? { field, bytes, sha256, ref: `arguments/${op.operationId}/${kind}-${sha256.slice(7, 23)}.json` }
      : { field, bytes, sha256, ref: `${op.operationId}#arguments-${kind}-${sha256.slice(7, 23)}`, in: 'item' };
  const write = () => (ref.in === 'item' ? sources.items.put(ref.ref, text, op.expiresAtEpoch) : sources.blobs!.put(ref.ref, text));
  // Already where they belong only if the record written before put them there (not an older layout).
  const stored = before && sources.placed.get(before)?.ref === ref.ref;
  return { ref, write: stored ? none.write : write };
}

/**
 * Arguments in items of their own in the operations table, under a key no operation id can have (`#`);
 * gzipped where that is smaller. They carry no attribute any index uses, and expire with their operation.
 */
export function argumentItems(doc: DynamoDBDocumentClient, table: string): ArgumentItems {
  return {
    async put(ref, text, expiresAtEpoch) {
      const gzipped = gzipSync(text, { level: 9 });
      const body = gzipped.byteLength < Buffer.byteLength(text) ? { argumentsGzip: gzipped } : { arguments: text };
      await doc.send(
        new PutCommand({ TableName: table, Item: { operationId: ref, ...body, ...(expiresAtEpoch ? { expiresAtEpoch } : {}) } }),
      );
    },
    async get(ref) {
      const out = await doc.send(new GetCommand({ TableName: table, Key: { operationId: ref }, ConsistentRead: true }));
      const item = out.Item;
      if (!item) return undefined;
      return item.argumentsGzip ? gunzipSync(item.argumentsGzip as Uint8Array).toString('utf8') : (item.arguments as string | undefined);
    },
  };
}
