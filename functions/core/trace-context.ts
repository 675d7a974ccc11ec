/**
 * A W3C traceparent, version 00, with non-zero trace and span ids. The API stores it only when it matches;
 * a malformed header is ignored (tracing must never refuse a tool call).
 */
export const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export function validTraceparent(header: string | undefined): string | undefined {
  const value = header?.trim().toLowerCase();
  return value && TRACEPARENT.test(value) ? value : undefined;
}
