import { type ArgumentField, argumentsForApprover } from '../core/approval-view';
import { html, type SafeHtml, visible } from './safe-html';

/**
 * The frozen arguments as a person deciding reads them, open on the page (the console's card, the signed-link
 * page): one row per field from core/approval-view.ts, each masked or folded field saying so, so what is
 * approved is what was read without a click. The pages show the arguments' hash in the line just above.
 */

/** Why a field's text is not its value, in words beside it. */
function note(field: ArgumentField): SafeHtml | '' {
  switch (field.shown) {
    case 'secret':
      return html` <span class="why">secret: not shown</span>`;
    case 'card':
      return html` <span class="why">card number: last four shown</span>`;
    case 'folded':
      return html` <span class="why">folded: ${(field.bytes ?? 0).toLocaleString('en-US')} bytes in all</span>`;
    case 'exact':
      return '';
  }
}

/** The styles of `argumentList`, for the page that shows it. */
export const ARGUMENT_LIST_STYLE = html`dl.args{display:grid;grid-template-columns:minmax(6rem,max-content) 1fr;gap:.2rem 1rem;margin:.3rem 0 .75rem;padding:.5rem .75rem;background:#f8fafc;border:1px solid #e2e8f0;border-radius:6px}
dl.args dt{font-weight:400;color:#334155}dl.args dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:.92em}
dl.args dd.shown-secret,dl.args dd.shown-card{color:#7c2d12}dl.args .why{font-family:system-ui,sans-serif;font-size:.85em;color:#64748b;font-style:italic}`;

/**
 * The arguments (undefined when none were recorded) with `secretFields` masked, under a heading of `level`.
 * `id` marks the list for a page that shows one operation.
 */
export function argumentList(
  args: unknown,
  secretFields: readonly string[] | undefined,
  options: { level: 'h2' | 'h3'; id?: string },
): SafeHtml {
  const heading = options.level === 'h2' ? html`<h2>Arguments</h2>` : html`<h3>Arguments</h3>`;
  const rows =
    args === undefined
      ? html`<p class="muted">No arguments were recorded with this approval.</p>`
      : html`<dl class="args"${options.id ? html` id="${options.id}"` : ''}>${argumentsForApprover(args, secretFields).map(
          (field) =>
            html`<dt><code>${visible(field.path || '(value)')}</code></dt><dd class="shown-${field.shown}" data-path="${field.path}">${visible(field.text)}${note(field)}</dd>`,
        )}</dl>`;
  return html`<section class="arguments">${heading}${rows}</section>`;
}
