import { html } from './safe-html';

/**
 * What every page for people shares (the approval page, the timeline page, the console): the security
 * headers (escaping is safe-html.ts). The pages need no script at all; they must not be framed (clickjacking
 * a button) and must not leak their URL (a signed link, a run id) through a Referer.
 */
export const PAGE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
} as const;

/** The style of a shown invisible character, for every page that uses `visible`. */
export const INVISIBLE_STYLE = html`.cc{background:#fde7a9;color:#7a4b00;font-family:monospace;border-radius:2px}`;
