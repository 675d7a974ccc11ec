/**
 * Amounts and untrusted text as people read them, decided once: the approval page, the timeline (its page
 * and `toolrunner trace`), the console and the approvers' notifications all format through here.
 */

/**
 * An amount in a currency's minor units (cents) as a person reads it: 123456 EUR is "€1,234.56",
 * 5000 JPY is "¥5,000". An unknown currency code still shows the amount, never throws.
 */
export function formatMinorUnits(amount: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(amount / 10 ** digits);
  } catch {
    return `${amount} minor units of ${currency}`;
  }
}

/**
 * A spend budget, a run's spend or a tool's cost (`maxSpendCents`, `usage.spendCents`, `costCents`): cents,
 * shown as US dollars the way the approval page shows a USD charge, so 60000 is "$600.00" everywhere.
 */
export function formatCents(cents: number): string {
  return formatMinorUnits(cents, 'USD');
}

/**
 * Characters that change how text around them reads without being seen: C0/C1 controls (but tab and
 * newline), bidirectional overrides and isolates, zero-width characters, line/paragraph separators, the
 * byte-order mark, interlinear annotations and tag characters. A right-to-left override can make "gpj.exe"
 * read "exe.jpg".
 */
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point: they are shown, not rendered.
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u115F\u1160\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\u3164\uFEFF\uFFF9-\uFFFB\u{E0000}-\u{E007F}]/gu;

/** `<U+202E>`: how an invisible character is named where it stood. */
export function codePointLabel(ch: string): string {
  return `<U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** Replaces every invisible or direction-changing character with what `render` makes of its label. */
export function replaceInvisible(text: string, render: (label: string) => string): string {
  return text.replace(INVISIBLE, (ch) => render(codePointLabel(ch)));
}

/** Plain text with each invisible or direction-changing character shown as `<U+202E>` (terminals, logs). */
export function revealInvisible(text: string): string {
  return replaceInvisible(text, (label) => label);
}
