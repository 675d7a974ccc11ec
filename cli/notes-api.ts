import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/**
 * `toolrunner notes-api`: the small upstream the README's quick start tools call, so the quick start runs
 * from an empty folder. Notes live in memory: `GET /notes/{id}`, and `PUT /notes/{id}` `{ text }`, which
 * deduplicates on `Idempotency-Key` like a real API (the same key answers the stored note, the write is not
 * made again). `GET /_notes/writes` lists every write it made, for a look at what happened.
 */
export interface NotesApi {
  url: string;
  server: Server;
}

const NoteId = z.string().regex(/^[a-z0-9-]{1,40}$/);
const PutBody = z.strictObject({ text: z.string().max(2000) });
const MAX_BODY_BYTES = 16 * 1024;

export function startNotesApi(port: number, host = '127.0.0.1'): Promise<NotesApi> {
  const notes = new Map<string, { id: string; text: string }>([['n1', { id: 'n1', text: 'first' }]]);
  const byKey = new Map<string, { id: string; text: string }>();
  const writes: { id: string; idempotencyKey?: string; at: string }[] = [];

  const reply = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, code: string, message: string): void =>
    reply(res, status, { error: { code, message } });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/_notes/writes') return reply(res, 200, writes);
    const match = path.match(/^\/notes\/([^/]+)$/);
    const id = match ? NoteId.safeParse(decodeURIComponent(match[1])) : undefined;
    if (!id?.success) return fail(res, 404, 'not_found', 'no such route');
    if (req.method === 'GET') {
      const note = notes.get(id.data);
      return note ? reply(res, 200, note) : fail(res, 404, 'not_found', 'no such note');
    }
    if (req.method !== 'PUT') return fail(res, 405, 'method_not_allowed', 'GET or PUT');
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) return fail(res, 413, 'payload_too_large', 'the body is over 16 KiB');
      chunks.push(chunk as Buffer);
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return fail(res, 400, 'invalid_request', 'the body is not JSON');
    }
    const body = PutBody.safeParse(json);
    if (!body.success) return fail(res, 400, 'invalid_request', 'the body must be { text } (a string of at most 2000 characters)');
    const key = req.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key ? key : undefined;
    const seen = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
    if (seen) return reply(res, 200, seen);
    const note = { id: id.data, text: body.data.text };
    notes.set(note.id, note);
    if (idempotencyKey) byKey.set(idempotencyKey, note);
    writes.push({ id: note.id, ...(idempotencyKey ? { idempotencyKey } : {}), at: new Date().toISOString() });
    reply(res, 200, note);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) fail(res, 500, 'internal', 'internal error');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve({ url: `http://${host}:${(server.address() as AddressInfo).port}`, server }));
  });
}
