/** What replaces a value a person should not read on a trace page. */
export const MASK = '••••';

/** Keys whose values are credentials or card data, whatever the tool calls them. */
const SECRET_KEY =
  /pass(word|wd|phrase)?|token|secret|key|authori[sz]ation|cookie|credential|signature|\bsig\b|cvv|cvc|pin$|card.?number|\bpan\b|iban|ssn/i;
/** 13 to 19 digits, optionally grouped by spaces or dashes: card-like, masked to the last four. */
const CARD_LIKE = /\b(?:\d[ -]?){12,18}\d\b/g;

/** Card-like numbers in `text` masked to their last four digits (one rule for every page a person reads). */
export function maskCards(text: string): string {
  return text.replace(CARD_LIKE, (match) => `${MASK}${match.replace(/\D/g, '').slice(-4)}`);
}

/**
 * A copy of a value fit to show an operator: values under secret-looking keys masked, card-like numbers
 * (in strings and in numbers) masked to their last four digits. Structure and every other value stay, so
 * the page still shows what was asked and answered.
 */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 32) return MASK;
  if (typeof value === 'string') return maskCards(value);
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) >= 1e12 ? maskCards(String(value)) : value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? MASK : redact(v, depth + 1)]));
  }
  return value;
}
