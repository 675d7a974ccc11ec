import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { canonicalJson } from '../core/canonical';
import { RunnerError } from '../core/errors';
import type { FetchScope } from './faults';

/** Where a cassette lives and whether it is being written or played back. */
export interface CassetteOptions {
  mode: 'record' | 'replay';
  /** A JSON file: written in `record` mode (replacing what was there), read in `replay` mode. */
  path: string;
}

/** What stands for the call's idempotency key in a recorded request (keys are new on every run). */
export const KEY_PLACEHOLDER = '{{idempotencyKey}}';

const Exchange = z.strictObject({
  request: z.strictObject({ method: z.string(), url: z.string(), body: z.string() }),
  response: z.strictObject({ status: z.number().int(), headers: z.record(z.string(), z.string()), body: z.string() }),
});
const CassetteFile = z.strictObject({ version: z.literal(1), exchanges: z.array(Exchange) });
type Exchange = z.infer<typeof Exchange>;

/** Headers of the connection, not of the answer: a replayed answer has its own. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);

/** A request the cassette does not hold: the test fails naming it. */
export class CassetteMissError extends RunnerError {
  override name = 'CassetteMissError';
}

/** The request as matched: method, URL and canonical body, with the idempotency key replaced by a placeholder. */
export async function matchKeyOf(request: Request, idempotencyKey: string): Promise<Exchange['request']> {
  const text = await request.clone().text();
  let body = text;
  try {
    if (text) body = canonicalJson(JSON.parse(text));
  } catch {
    // Not JSON: matched as the bytes were sent.
  }
  const hide = (s: string) => s.split(idempotencyKey).join(KEY_PLACEHOLDER);
  return { method: request.method, url: hide(request.url), body: hide(body) };
}

function describe(r: Exchange['request']): string {
  return `${r.method} ${r.url}${r.body ? ` ${r.body.length > 200 ? `${r.body.slice(0, 200)}…` : r.body}` : ''}`;
}

/**
 * A cassette over `fetch`: in `record` mode every exchange goes to the upstream and is written to the file;
 * in `replay` mode each request is answered from the first unused recorded exchange that matches it, and
 * one that matches none is refused (`misses` holds it, and the call fails naming it).
 */
export function cassette(options: CassetteOptions, upstream: typeof fetch = (i, init) => globalThis.fetch(i, init)) {
  const recorded: Exchange[] = [];
  const used = new Set<number>();
  const misses: string[] = [];
  let loaded: Exchange[] = [];
  if (options.mode === 'replay') {
    if (!existsSync(options.path)) throw new CassetteMissError(`no cassette at ${options.path} (record it first: mode "record")`);
    loaded = CassetteFile.parse(JSON.parse(readFileSync(options.path, 'utf8'))).exchanges;
  }
  const save = () => {
    mkdirSync(dirname(options.path), { recursive: true });
    writeFileSync(options.path, `${JSON.stringify({ version: 1, exchanges: recorded }, null, 2)}\n`);
  };
  if (options.mode === 'record') save();

  const fetchFor =
    (scope: FetchScope): typeof fetch =>
    async (input, init) => {
      const request = new Request(input, init);
      const key = await matchKeyOf(request, scope.idempotencyKey);
      if (options.mode === 'record') {
        const res = await upstream(request);
        const body = await res.text();
        const headers: Record<string, string> = {};
        res.headers.forEach((value, name) => {
          if (!HOP_HEADERS.has(name)) headers[name] = value;
        });
        recorded.push({
          request: key,
          response: { status: res.status, headers, body: body.split(scope.idempotencyKey).join(KEY_PLACEHOLDER) },
        });
        save();
        return new Response(body || null, { status: res.status, headers });
      }
      const same = (e: Exchange) => e.request.method === key.method && e.request.url === key.url && e.request.body === key.body;
      let index = loaded.findIndex((e, i) => !used.has(i) && same(e));
      // Every match used already: the last one answers again (a lookup repeated more often than when recorded).
      if (index < 0) index = loaded.findLastIndex(same);
      if (index < 0) {
        const said = `the cassette ${options.path} has no exchange for ${describe(key)}`;
        misses.push(said);
        throw new CassetteMissError(said);
      }
      used.add(index);
      const { response } = loaded[index];
      return new Response(response.body.split(KEY_PLACEHOLDER).join(scope.idempotencyKey) || null, {
        status: response.status,
        headers: response.headers,
      });
    };
  return { fetchFor, misses };
}
