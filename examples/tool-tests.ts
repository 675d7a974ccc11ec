import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, requestJson } from 'toolrunner';
import { CassetteMissError, createTestRunner } from 'toolrunner/testing';

// The quick start's save_note, against the notes API (`npx toolrunner notes-api`).
const api = process.env.NOTES_URL ?? 'http://127.0.0.1:4000';
const Note = z.object({ id: z.string(), text: z.string() });
const saveNote = defineTool({
  name: 'save_note',
  description: 'Create or replace a note.',
  inputSchema: z.strictObject({ id: z.string().regex(/^[a-z0-9-]{1,40}$/), text: z.string().max(2000) }),
  outputSchema: Note,
  risk: 'reversible_write',
  timeoutMs: 3_000,
  maxAttempts: 3,
  supportsIdempotency: true,
  approval: 'never',
  execute: (ctx, input) =>
    requestJson(ctx, {
      method: 'PUT',
      url: `${api}/notes/${input.id}`,
      body: { text: input.text },
      headers: { 'Idempotency-Key': ctx.idempotencyKey },
    }) as Promise<z.infer<typeof Note>>,
});

// Recorded once with `mode: 'record'` while the notes API ran; replayed here without it.
const cassette = { mode: 'replay' as const, path: new URL('./cassettes/save-note.json', import.meta.url).pathname };

describe('save_note', () => {
  it('saves a note', async () => {
    const runner = createTestRunner({ tools: [saveNote], cassette });
    const { envelope, trace } = await runner.call('save_note', { id: 'n1', text: 'hello' });
    expect(envelope).toMatchObject({ status: 'succeeded', result: { id: 'n1', text: 'hello' } });
    expect(trace.filter((e) => e.type === 'attempt.started')).toHaveLength(1);
  });

  it('sends the write again with the same key when its answer was lost', async () => {
    const runner = createTestRunner({ tools: [saveNote], cassette, faults: { call_1: ['response_lost'] } });
    const { envelope, requests } = await runner.call('save_note', { id: 'n1', text: 'hello' }, { callId: 'call_1' });
    expect(envelope.status).toBe('succeeded');
    expect(requests.map((r) => r.fault ?? 'answered')).toEqual(['response_lost', 'answered']);
  });

  it('fails naming a request the cassette does not hold', async () => {
    const runner = createTestRunner({ tools: [saveNote], cassette });
    await expect(runner.call('save_note', { id: 'n2', text: 'never recorded' })).rejects.toThrow(CassetteMissError);
  });
});
