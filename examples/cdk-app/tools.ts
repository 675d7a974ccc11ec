import { defineTool, requestJson } from 'toolrunner';
import { z } from 'zod';

const api = process.env.NOTES_API ?? 'http://127.0.0.1:4000';
const Note = z.object({ id: z.string(), text: z.string() });

export default [
  defineTool({
    name: 'get_note',
    description: 'Read a note by id.',
    inputSchema: z.strictObject({ id: z.string().regex(/^[a-z0-9-]{1,40}$/) }),
    outputSchema: Note,
    risk: 'read',
    timeoutMs: 3_000,
    maxAttempts: 3,
    supportsIdempotency: true,
    approval: 'never',
    execute: (ctx, input) => requestJson(ctx, { method: 'GET', url: `${api}/notes/${input.id}` }),
  }),
  defineTool({
    name: 'save_note',
    description: 'Create or replace a note.',
    inputSchema: z.strictObject({ id: z.string().regex(/^[a-z0-9-]{1,40}$/), text: z.string().max(2000) }),
    outputSchema: Note,
    risk: 'reversible_write',
    timeoutMs: 3_000,
    maxAttempts: 3,
    supportsIdempotency: true, // the upstream deduplicates on Idempotency-Key
    lockKey: (input) => input.id,
    approval: 'never',
    execute: (ctx, input) =>
      requestJson(ctx, {
        method: 'PUT',
        url: `${api}/notes/${input.id}`,
        body: { text: input.text },
        headers: { 'Idempotency-Key': ctx.idempotencyKey },
      }),
  }),
];
