import type { Context } from 'hono';
import { checkRequestOrigin, listensOnLoopback, type OriginCheck } from '../http/request-origin';

/**
 * Where a console request came from, and what the console may assume about its transport. The scheme is
 * the one the client used: `X-Forwarded-Proto` from a gateway in front (API Gateway sets it; its Lambda
 * event's URL always says https), else the request URL's.
 */
export interface RequestSite {
  scheme: 'http' | 'https';
  /** The server listens on loopback (`npm start`, the tests), or its public URL names a loopback host. */
  onLoopback: boolean;
}

export function requestSite(c: Context, publicBaseUrl: string): RequestSite {
  const forwarded = c.req.header('x-forwarded-proto')?.split(',')[0].trim().toLowerCase();
  const scheme = forwarded === 'http' || forwarded === 'https' ? forwarded : new URL(c.req.url).protocol === 'https:' ? 'https' : 'http';
  return { scheme, onLoopback: listensOnLoopback(c.env, publicBaseUrl) };
}

/** The session cookie is `Secure` unless the console is plain HTTP on loopback, where a browser has no TLS to offer. */
export function cookieIsSecure(site: RequestSite): boolean {
  return !(site.scheme === 'http' && site.onLoopback);
}

/**
 * The Origin check of every console form POST (sign-in included), on top of SameSite=Strict and the
 * session's CSRF token: the browser's `Origin` must be the console's own (the same Host and `Origin` rules
 * as `/mcp`, http/request-origin.ts). A page served with `Referrer-Policy: no-referrer`, as every console
 * page is, makes the browser send `Origin: null` even for its own forms; then `Sec-Fetch-Site` (sent by
 * Chromium, Firefox and Safari) must say `same-origin`. A form on another origin, even another port of
 * the same host (the same site, so SameSite lets the cookie go), says `same-site` or `cross-site`.
 */
export function checkFormOrigin(c: Context, publicBaseUrl: string): OriginCheck {
  const header = c.req.header('origin');
  const origin = header === undefined || header === 'null' ? null : header;
  if (origin === null && c.req.header('sec-fetch-site') !== 'same-origin')
    return { ok: false, reason: 'the browser did not vouch that it came from this console' };
  return checkRequestOrigin(
    { url: c.req.url, host: c.req.header('host') ?? null, origin, forwardedProto: c.req.header('x-forwarded-proto') ?? null },
    { publicBaseUrl, allowedOrigins: [], onLoopback: requestSite(c, publicBaseUrl).onLoopback },
  );
}
