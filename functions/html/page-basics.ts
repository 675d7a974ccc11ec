import { replaceInvisible } from '../core/format';

/**
 * What every page for people shares (the approval page, the timeline page, the console): escaping and the
 * security headers. The pages need no script at all; they must not be framed (clickjacking a button) and
 * must not leak their URL (a signed link, a run id) through a Referer.
 */
export const PAGE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
} as const;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML-escapes a value for text or a quoted attribute. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

/**
 * Everything that comes from arguments, records or people reaches HTML through here: escaped, with
 * invisible and direction-changing characters shown as a marked `<U+202E>` (core/format.ts decides which).
 */
export function visibleText(value: unknown): string {
  return replaceInvisible(escapeHtml(value), (label) => `<span class="cc">${escapeHtml(label)}</span>`);
}

/** The style of a shown invisible character, for every page that uses `visibleText`. */
export const INVISIBLE_STYLE = '.cc{background:#fde7a9;color:#7a4b00;font-family:monospace;border-radius:2px}';
