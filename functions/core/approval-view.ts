import { MASK, maskCards } from './redact';

/**
 * What a person deciding an approval reads of the frozen arguments, the same on every surface that asks them
 * (console card, signed-link page, Slack, webhook payload): every field exactly, except fields the tool marks
 * secret (masked whole) and card-like numbers (masked to their last four); strings longer than
 * `FOLD_AFTER_CHARS` are folded, with their size, so a page stays readable without hiding that more exists.
 */
export interface ArgumentField {
  /** Where the value sits: `amount`, `address.line1`, `items[0].sku`; `` for a bare top-level value. */
  path: string;
  /** The value as shown: strings as they are, anything else as JSON (`{}`, `[]`, `null` for empty containers). */
  text: string;
  /** Why the text is not the value exactly, when it is not. */
  shown: 'exact' | 'secret' | 'card' | 'folded';
  /** The value's UTF-8 size in bytes, given when folded. */
  bytes?: number;
}

export const FOLD_AFTER_CHARS = 200;

const MAX_DEPTH = 32;

/**
 * The arguments as a flat list of fields, in the arguments' own key order. `secretFields` are paths in the
 * same notation as `ArgumentField.path` (`password`, `card.cvc`, `items[].pin` for every item); a secret field
 * hides everything under it.
 */
export function argumentsForApprover(args: unknown, secretFields: readonly string[] = []): ArgumentField[] {
  const secret = new Set(secretFields);
  const fields: ArgumentField[] = [];
  const walk = (value: unknown, path: string, pattern: string, depth: number): void => {
    if (path && (secret.has(path) || secret.has(pattern))) {
      fields.push({ path, text: MASK, shown: 'secret' });
      return;
    }
    if (depth > MAX_DEPTH) {
      fields.push({ path, text: MASK, shown: 'folded', bytes: utf8Bytes(JSON.stringify(value) ?? '') });
      return;
    }
    if (Array.isArray(value)) {
      if (value.length === 0) fields.push({ path, text: '[]', shown: 'exact' });
      for (const [i, item] of value.entries()) walk(item, `${path}[${i}]`, `${pattern}[]`, depth + 1);
      return;
    }
    if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      if (entries.length === 0) fields.push({ path, text: '{}', shown: 'exact' });
      for (const [key, item] of entries) walk(item, path ? `${path}.${key}` : key, pattern ? `${pattern}.${key}` : key, depth + 1);
      return;
    }
    fields.push({ path, ...leaf(value) });
  };
  walk(args, '', '', 0);
  return fields;
}

function leaf(value: unknown): Omit<ArgumentField, 'path'> {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const masked = maskCards(text);
  if (masked !== text) return { text: fold(masked).text, shown: 'card' };
  const folded = fold(text);
  return folded.folded ? { text: folded.text, shown: 'folded', bytes: utf8Bytes(text) } : { text, shown: 'exact' };
}

function fold(text: string): { text: string; folded: boolean } {
  const chars = Array.from(text);
  if (chars.length <= FOLD_AFTER_CHARS) return { text, folded: false };
  return { text: `${chars.slice(0, FOLD_AFTER_CHARS).join('')}…`, folded: true };
}

const encoder = new TextEncoder();
function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/** One field as a line of plain text (Slack, email, the CLI): `path: text`, with the size of a folded value. */
export function argumentLine(field: ArgumentField): string {
  const size = field.shown === 'folded' && field.bytes !== undefined ? ` (${field.bytes.toLocaleString('en-US')} bytes)` : '';
  return `${field.path || '(value)'}: ${field.text}${size}`;
}
