/**
 * What a failed network call says: the method, the URL without what may be secret (credentials, query,
 * fragment), the host and port it tried, and the cause (`ECONNREFUSED`, `ENOTFOUND`, ...). fetch's own
 * "fetch failed" names none of them, and a URL may carry a token.
 */

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** `url` without credentials, query or fragment; `(invalid URL)` when it does not parse. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/** Every URL in `text` as `safeUrl` writes it (an error message may quote the URL it was given). */
export function scrubUrls(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]+/gi, (url) => safeUrl(url));
}

/** `host:port` of a URL, the scheme's default port when it names none. */
export function hostAndPort(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || DEFAULT_PORTS[u.protocol] || '?'}`;
  } catch {
    return undefined;
  }
}

/** The innermost causes of a fetch failure: undici wraps them in `cause`, several addresses in an AggregateError. */
function causesOf(error: unknown): { code?: string; message?: string }[] {
  const cause = (error as { cause?: unknown })?.cause ?? error;
  const many = (cause as { errors?: unknown[] })?.errors;
  const list = Array.isArray(many) && many.length > 0 ? many : [cause];
  return list.map((c) => ({ code: (c as { code?: string })?.code, message: (c as { message?: string })?.message }));
}

/** The cause in words: the system's code and message, de-duplicated, with any URL scrubbed. */
export function causeText(error: unknown): string {
  const parts = causesOf(error).map(({ code, message }) => {
    if (message && code && message.includes(code)) return message;
    return [code, message].filter(Boolean).join(' ') || 'unknown cause';
  });
  return scrubUrls([...new Set(parts)].join('; '));
}

/** One line for a failed call: `GET http://127.0.0.1:3000/v1/runs (127.0.0.1:3000): connect ECONNREFUSED 127.0.0.1:3000`. */
export function networkErrorMessage(method: string, url: string, error: unknown): string {
  const where = hostAndPort(url);
  return `${method} ${safeUrl(url)}${where ? ` (${where})` : ''}: ${causeText(error)}`;
}
