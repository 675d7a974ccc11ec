import type { TimelineGroup, TimelineModel } from '../core/timeline';
import { INVISIBLE_STYLE, PAGE_SECURITY_HEADERS } from './page-basics';
import { html, joinHtml, raw, type SafeHtml, visible } from './safe-html';

/** The approval page's headers, and no caching of run data. */
export const PAGE_HEADERS = { ...PAGE_SECURITY_HEADERS, 'Cache-Control': 'no-store' } as const;

/** The timeline's own style; the console's run page uses it too. */
export const TIMELINE_STYLE = html`h2{font-size:1.05rem;margin:1.5rem 0 .25rem;font-family:ui-monospace,monospace}
#timeline ol{list-style:none;padding:0;margin:0;font-family:ui-monospace,monospace;font-size:13.5px}
#timeline li{display:grid;grid-template-columns:6.5rem 2.5rem 1fr;gap:.5rem;padding:.1rem .4rem;border-left:3px solid #ddd}
li .at{color:#666;text-align:right}li .n{color:#555}
li.attempt{border-color:#2b6cb0}li.backoff{border-color:#b7791f}li.approval{border-color:#6b46c1}
li.reconcile{border-color:#00838f}li.result{border-color:#2f855a}li.replay{border-color:#718096}
li.notable{background:#fff4e5;border-color:#c05621;font-weight:600}li.conflict,li.late{background:#fde8e8;border-color:#c53030}
details{margin:.4rem 0 0 .4rem}pre{background:#f4f4f4;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:13px}
.meta{color:#555}${INVISIBLE_STYLE}`;

const PAGE_STYLE = html`body{font:15px/1.45 system-ui,sans-serif;max-width:72rem;margin:1.5rem auto;padding:0 1rem;color:#111}
h1{font-size:1.3rem}${TIMELINE_STYLE}`;

const MAIN_OPEN = '<main id="timeline">';
const MAIN_CLOSE = '</main>';

function lines(group: TimelineGroup): SafeHtml {
  return joinHtml(
    group.lines.map((line) => {
      const classes = [line.kind, line.notable ? 'notable' : ''].filter(Boolean).join(' ');
      const attempt = line.attempt !== undefined ? `#${line.attempt}` : '';
      return html`<li class="${classes}" data-type="${line.type}" data-seq="${line.seq}"><span class="at" title="${line.at}">${line.offset}</span><span class="n">${attempt}</span><span class="text">${visible(line.text)}</span></li>`;
    }),
    '\n',
  );
}

function details(group: TimelineGroup): SafeHtml | '' {
  if (!group.details) return '';
  const block = (label: string, value: unknown) =>
    value === undefined
      ? ''
      : html`<details open><summary>${label}</summary><pre>${visible(JSON.stringify(value, null, 2))}</pre></details>`;
  return html`${block('Arguments (frozen, secrets masked)', group.details.arguments)}${block('Result (secrets masked)', group.details.result)}`;
}

function timelineMainHtml(model: TimelineModel, viewer: string): SafeHtml {
  const sections = joinHtml(
    model.groups.map(
      (group) =>
        html`<section${group.operationId ? html` id="${group.operationId}"` : ''}><h2>${visible(group.title)}</h2>\n<ol>\n${lines(group)}\n</ol>${details(group)}</section>`,
    ),
    '\n',
  );
  return html`${raw(MAIN_OPEN)}<p class="meta" id="summary">${visible(model.summary)} · viewed by ${visible(viewer)} · times from the run's first event</p>
${model.groups.length ? sections : html`<p>No events.</p>`}
${raw(MAIN_CLOSE)}`;
}

/**
 * The timeline itself, one `<main id="timeline">`: every value escaped (`html`), text through `visible`, so
 * nothing inside can close the element early and invisible characters show as `<U+202E>`.
 */
export function timelineMain(model: TimelineModel, viewer: string): string {
  return timelineMainHtml(model, viewer).toString();
}

/**
 * The `<main id="timeline">` of a page `timelinePage` rendered, or undefined. The console shows the API's
 * own timeline page inside its frame this way, so what a key may see of a run is decided by the API alone.
 */
export function timelineMainOf(page: string): string | undefined {
  const start = page.indexOf(MAIN_OPEN);
  const end = page.lastIndexOf(MAIN_CLOSE);
  return start >= 0 && end > start ? page.slice(start, end + MAIN_CLOSE.length) : undefined;
}

/** The trace page: the timeline model as HTML, no JavaScript, everything escaped. */
export function timelinePage(model: TimelineModel, viewer: string): string {
  const title = model.runId ? `Trace of ${model.runId}` : 'Trace';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title}</title><style>${PAGE_STYLE}</style></head>
<body><h1>${visible(title)}</h1>
${timelineMainHtml(model, viewer)}
</body></html>`.toString();
}
