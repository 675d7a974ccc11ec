import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/**
 * Hono's body limit, without its cost on every request that declares its length. Hono's limit first turns the
 * Node request into a web Request to look for a body, and the body is then read through a web stream: about
 * 3% of the server's CPU on every call. So a declared length is judged from the header alone, GET and HEAD
 * (whose bodies nothing reads) pass, and only a body without a length (chunked) is counted as it streams in.
 */
export function bodySizeLimit(maxSize: number, onError: (c: Context) => Response | Promise<Response>): MiddlewareHandler {
  const streamed = bodyLimit({ maxSize, onError });
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return streamed(c, next);
    return Number(length) > maxSize ? onError(c) : next();
  };
}
