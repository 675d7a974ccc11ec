import { z } from 'zod';
import { decodeJson, encodeJson } from '../core/signed-token';

/** Where the next page of pending approvals starts: the index key and table key of the last item given. */
export const PendingApprovalKeySchema = z.strictObject({
  approvalPendingKey: z.literal('pending'),
  createdAt: z.string().min(1).max(64),
  operationId: z.string().regex(/^op_[A-Za-z0-9_-]{1,64}$/),
});
export type PendingApprovalKey = z.infer<typeof PendingApprovalKeySchema>;

/** Where the next page of runs starts: the index key and table key of the last run given (or read). */
export const RunListKeySchema = z.strictObject({
  listKey: z.literal('runs'),
  createdAt: z.string().min(1).max(64),
  runId: z.string().regex(/^run_[A-Za-z0-9_-]{1,64}$/),
});
export type RunListKey = z.infer<typeof RunListKeySchema>;

const MAX_CURSOR_CHARS = 512;

/** Opaque to clients: base64url of the key, so they cannot depend on the table's layout. */
export function encodeCursor(key: PendingApprovalKey | RunListKey): string {
  return encodeJson(key);
}

/** The key a cursor names, or undefined for anything this API did not hand out for this list. */
export function decodeCursor<S extends z.ZodType>(cursor: string, schema: S): z.infer<S> | undefined {
  return decodeJson(cursor, schema, MAX_CURSOR_CHARS);
}
