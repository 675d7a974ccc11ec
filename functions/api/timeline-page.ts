import type { TimelineGroup, TimelineModel } from '../core/timeline';
import { escapeHtml } from './approval-page';

/** The same headers as the approval page: no script, no framing, no referrer, no caching of run data. */
export const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
} as const;

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;max-width:72rem;margin:1.5rem auto;padding:0 1rem;color:#111}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin:1.5rem 0 .25rem;font-family:ui-monospace,monospace}
ol{list-style:none;padding:0;margin:0;font-family:ui-monospace,monospace;font-size:13.5px}
li{display:grid;grid-template-columns:6.5rem 2.5rem 1fr;gap:.5rem;padding:.1rem .4rem;border-left:3px solid #ddd}
li .at{color:#666;text-align:right}li .n{color:#555}
li.attempt{border-color:#2b6cb0}li.backoff{border-color:#b7791f}li.approval{border-color:#6b46c1}
li.reconcile{border-color:#00838f}li.result{border-color:#2f855a}li.replay{border-color:#718096}
li.notable{background:#fff4e5;border-color:#c05621;font-weight:600}li.conflict,li.late{background:#fde8e8;border-color:#c53030}
details{margin:.4rem 0 0 .4rem}pre{background:#f4f4f4;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:13px}
.meta{color:#555}`;

function lines(group: TimelineGroup): string {
  return group.lines
    .map((line) => {
      const classes = [line.kind, line.notable ? 'notable' : ''].filter(Boolean).join(' ');
      const attempt = line.attempt !== undefined ? `#${line.attempt}` : '';
      return `<li class="${classes}" data-type="${escapeHtml(line.type)}" data-seq="${line.seq}"><span class="at" title="${escapeHtml(line.at)}">${escapeHtml(line.offset)}</span><span class="n">${escapeHtml(attempt)}</span><span class="text">${escapeHtml(line.text)}</span></li>`;
    })
    .join('\n');
}

function details(group: TimelineGroup): string {
  if (!group.details) return '';
  const block = (label: string, value: unknown) =>
    value === undefined
      ? ''
      : `<details open><summary>${escapeHtml(label)}</summary><pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre></details>`;
  return block('Arguments (frozen, secrets masked)', group.details.arguments) + block('Result (secrets masked)', group.details.result);
}

/** The trace page: the timeline model as HTML, no JavaScript, everything escaped. */
export function timelinePage(model: TimelineModel, viewer: string): string {
  const sections = model.groups
    .map(
      (group) =>
        `<section${group.operationId ? ` id="${escapeHtml(group.operationId)}"` : ''}><h2>${escapeHtml(group.title)}</h2>\n<ol>\n${lines(group)}\n</ol>${details(group)}</section>`,
    )
    .join('\n');
  const title = model.runId ? `Trace of ${model.runId}` : 'Trace';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
<p class="meta" id="summary">${escapeHtml(model.summary)} · viewed by ${escapeHtml(viewer)} · times from the run's first event</p>
${sections || '<p>No events.</p>'}
</body></html>`;
}
