import { html, type SafeHtml } from '../../functions/html/safe-html';

/**
 * Draws the Block Kit blocks the runner emits (header, section with text or fields, context, actions with
 * buttons, divider) roughly as Slack's desktop client does, so a screenshot shows a person what an approver
 * reads. Text objects are drawn as text (`plain_text` and `mrkdwn` alike: the runner sends no markup); a
 * block type the runner does not emit is drawn as a red box, so a screenshot shows it at once.
 */

interface TextObject {
  type: 'plain_text' | 'mrkdwn';
  text: string;
}
type Block = { type: string; [key: string]: unknown };

const text = (t: unknown) => html`<span class="text">${(t as TextObject)?.text ?? ''}</span>`;

function block(b: Block): SafeHtml {
  switch (b.type) {
    case 'header':
      return html`<div class="header">${text(b.text)}</div>`;
    case 'section':
      return html`<div class="section">${b.text ? html`<div>${text(b.text)}</div>` : ''}${
        b.fields ? html`<div class="fields">${(b.fields as unknown[]).map((f) => html`<div>${text(f)}</div>`)}</div>` : ''
      }</div>`;
    case 'context':
      return html`<div class="context">${(b.elements as unknown[]).map((e) => text(e))}</div>`;
    case 'actions':
      return html`<div class="actions">${(b.elements as { style?: string; text: unknown }[]).map(
        (e) => html`<button class="${e.style ?? 'default'}">${text(e.text)}</button>`,
      )}</div>`;
    case 'divider':
      return html`<hr>`;
    default:
      return html`<div class="unknown">unknown block ${b.type}</div>`;
  }
}

/** A page showing one message from the bot, as it appears in a direct message. */
export function renderSlackMessage(message: { text: string; blocks: Block[] }, botName = 'Tool Runner'): string {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${message.text}</title>
<style>
body{margin:0;background:#fff;font:15px/1.46668 Lato,"Helvetica Neue",Arial,sans-serif;color:#1d1c1d}
.msg{display:flex;gap:8px;padding:8px 20px;max-width:760px}
.avatar{width:36px;height:36px;border-radius:4px;background:#4a154b;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center;flex:none}
.who{font-weight:900}.app{font-size:10px;background:#ddd;border-radius:2px;padding:1px 3px;margin-left:4px;color:#616061}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
.header{font-size:18px;font-weight:900;margin:6px 0 4px}
.section{margin:4px 0}.fields{display:grid;grid-template-columns:1fr 1fr;gap:4px 16px}
.context{font-size:12px;color:#616061;margin:4px 0;display:flex;gap:8px;flex-wrap:wrap}
.actions{margin:8px 0;display:flex;gap:8px}
button{font:700 13px Lato,Arial,sans-serif;padding:0 12px;height:28px;border-radius:4px;border:1px solid #ccc;background:#fff;color:#1d1c1d}
button.primary{background:#007a5a;border-color:#007a5a;color:#fff}button.danger{background:#fff;border-color:#e01e5a;color:#e01e5a}
.unknown{border:2px solid red;color:red;padding:4px}
</style></head><body><div class="msg"><div class="avatar">TR</div><div class="body">
<div><span class="who">${botName}</span><span class="app">APP</span></div>
${message.blocks.map(block)}
</div></div></body></html>`.toString();
}
