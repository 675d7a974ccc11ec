import { replaceInvisible } from '../core/format';

/**
 * HTML escaped by default: every page and fragment is written with the `html` tag, which escapes each value
 * it interpolates unless the value is already HTML (a `SafeHtml`: another `html` result, `visible(...)`, or
 * `raw(...)` for text the code itself vouches for). A new interpolation is therefore safe without thinking;
 * only `raw` needs a reason. Escaping is for text and double- or single-quoted attribute values alike.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML-escapes a value for text or a quoted attribute. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

/** Text that is already HTML. Only `html`, `raw`, `visible` and `joinHtml` make one, so `instanceof` is the mark. */
export class SafeHtml {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}

/**
 * Marks text as HTML the code vouches for (a fixed fragment, HTML this code rendered elsewhere). Never for
 * anything that comes from arguments, records, requests or people.
 */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text);
}

/**
 * A value as a template literal would print it (so `undefined`, `null` and `false` print as those words, as
 * they always did), escaped unless it is `SafeHtml`; an array's items each so, joined without a separator.
 */
function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.toString();
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(value);
}

/** The tag: the literal's own text as written, every interpolated value through `render`. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let text = strings[0];
  for (let i = 0; i < values.length; i++) text += render(values[i]) + strings[i + 1];
  return new SafeHtml(text);
}

/** Items joined with a separator (both rendered as `html` renders values): `Array.join` would turn `SafeHtml` back into text. */
export function joinHtml(items: readonly unknown[], separator: string): SafeHtml {
  return new SafeHtml(items.map(render).join(escapeHtml(separator)));
}

/**
 * Everything that comes from arguments, records or people and is shown as text goes through here: escaped,
 * with invisible and direction-changing characters shown as a marked `<U+202E>` (core/format.ts decides
 * which). For text only: the mark is an element, so inside an attribute a value is interpolated as it is.
 */
export function visibleText(value: unknown): string {
  return replaceInvisible(escapeHtml(value), (label) => `<span class="cc">${escapeHtml(label)}</span>`);
}

/** `visibleText` as a fragment for `html`. */
export function visible(value: unknown): SafeHtml {
  return new SafeHtml(visibleText(value));
}
