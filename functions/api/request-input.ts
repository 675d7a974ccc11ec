import type { Context } from 'hono';
import type { z } from 'zod';
import { isSaneId, JSON_BOUNDS, parseBoundedJson } from '../core/json-bounds';
import { ApiError } from './api-error';

export async function jsonBody<T>(c: Context, schema: z.ZodType<T>, optional = false): Promise<T> {
  const text = await c.req.text();
  if (!text.trim()) {
    if (optional) return schema.parse({});
    throw new ApiError(400, 'invalid_request', 'a JSON body is required');
  }
  // Bounds first: hostile depth, numbers and keys are answered here, before any schema or store sees them.
  const bounded = parseBoundedJson(text);
  if (!bounded.ok) throw new ApiError(400, 'invalid_request', bounded.reason === 'syntax' ? 'the body is not valid JSON' : bounded.message);
  const parsed = schema.safeParse(bounded.value);
  if (!parsed.success) throw new ApiError(400, 'invalid_request', issuesText(parsed.error));
  return parsed.data;
}

/** A query string checked with a zod schema: each name once, anything else is `400 invalid_request`. */
export function queryOf<S extends z.ZodType>(c: Context, schema: S): z.infer<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw new ApiError(400, 'invalid_request', issuesText(parsed.error));
  return parsed.data;
}

function issuesText(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
    .join('; ');
}

/**
 * Tool-call `arguments`, as an object or as a JSON string, at most 128 KiB; a JSON string gets the same
 * bounds as an object would. A string that is not JSON at all is left alone: it becomes an
 * `invalid_arguments` envelope, which the model can act on.
 */
export function assertArgumentsBounded(args: unknown): void {
  const text = typeof args === 'string' ? args : JSON.stringify(args);
  if (Buffer.byteLength(text) > JSON_BOUNDS.maxArgumentsBytes)
    throw new ApiError(400, 'invalid_request', `arguments: over ${JSON_BOUNDS.maxArgumentsBytes / 1024} KiB`);
  if (typeof args !== 'string') return;
  const bounded = parseBoundedJson(args, ['arguments'], JSON_BOUNDS.maxDepth - 1);
  if (!bounded.ok && bounded.reason === 'bounds') throw new ApiError(400, 'invalid_request', bounded.message);
}

/** A path id: anything the API could not have issued names nothing (404), whatever its length. */
export function pathId(c: Context, name: string, what: string): string {
  const id = c.req.param(name);
  if (!isSaneId(id)) throw new ApiError(404, 'not_found', `no such ${what}`);
  return id;
}
