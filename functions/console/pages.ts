import type { Approval, Review, RunsPage } from '../client';
import { policiesLine, RISK_TEXT, summaryLines } from '../html/approval-page';
import { ARGUMENT_LIST_STYLE, argumentList } from '../html/argument-list';
import { INVISIBLE_STYLE } from '../html/page-basics';
import { html, joinHtml, raw, type SafeHtml, visible } from '../html/safe-html';
import { TIMELINE_STYLE } from '../html/timeline-page';
import { formatCents } from '../core/format';
import type { Principal } from '../core/model';
import { hasRole } from '../core/policy';
import type { ToolSpec } from '../core/tool-spec';

/**
 * The console's HTML: plain pages and forms that work without JavaScript. Everything that comes from
 * records, arguments or people is escaped (`html`) and shown through `visible`; every form carries the
 * session's CSRF token.
 */

/** Who is signed in, for the frame: their id, their roles and the token their forms carry. */
export interface Viewer {
  principal: Principal;
  csrf: string;
}

/** One line at the top of a page: what just happened, or why it did not. */
export interface Banner {
  kind: 'done' | 'error';
  text: string;
}

const STYLE = html`*{box-sizing:border-box}body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#111;background:#f6f7f9}
header{background:#1f2937;color:#fff;padding:.6rem 1.25rem;display:flex;gap:1.25rem;align-items:center;flex-wrap:wrap}
header .brand{font-weight:700;margin-right:.5rem}header nav{display:flex;gap:1rem;flex:1}
header a{color:#e5e7eb;text-decoration:none}header a[aria-current=page]{color:#fff;border-bottom:2px solid #60a5fa}
header form{margin:0}header .who{color:#cbd5e1}header button{background:transparent;color:#e5e7eb;border:1px solid #64748b;border-radius:4px;padding:.2rem .7rem;font-size:.9rem;cursor:pointer}
main{max-width:64rem;margin:1.5rem auto;padding:0 1.25rem}h1{font-size:1.35rem;margin:.2rem 0 1rem}
.card{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:1rem 1.25rem;margin:0 0 1rem}
.card h2{font-size:1.1rem;margin:0 0 .5rem;font-family:system-ui,sans-serif}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0}dt{font-weight:600;color:#475569}dd{margin:0;overflow-wrap:anywhere}
code{font-family:ui-monospace,monospace;font-size:.92em}
pre{background:#f4f4f4;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:13px;margin:.3rem 0}
ul.summary{margin:.25rem 0 .5rem;padding-left:1.2rem;font-size:1.05rem}
.risk{font-weight:700;color:#b3261e}.muted{color:#64748b}
label{display:block;margin:.5rem 0 .25rem;font-weight:600}input[type=text],input[type=password],textarea,select{font:inherit;padding:.4rem .5rem;border:1px solid #94a3b8;border-radius:4px}
input[type=text],input[type=password],textarea{width:100%;max-width:36rem}textarea{min-height:4.5rem}
button{font:inherit;padding:.45rem 1.1rem;border-radius:4px;border:1px solid #64748b;background:#fff;cursor:pointer;margin:.5rem .5rem 0 0}
button.approve,button.succeeded{background:#0a7d32;border-color:#0a7d32;color:#fff}button.reject,button.failed{background:#b3261e;border-color:#b3261e;color:#fff}
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}
.banner{padding:.6rem 1rem;border-radius:6px;margin:0 0 1rem}.banner.done{background:#dcfce7;border:1px solid #86efac}.banner.error{background:#fee2e2;border:1px solid #fca5a5}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid #e2e8f0}th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid #e2e8f0;font-size:14px}
th{background:#f1f5f9;color:#334155}td.num{text-align:right;font-variant-numeric:tabular-nums}
.status{font-weight:600}.status.open{color:#1d4ed8}.status.cancelled{color:#64748b}.status.budget_exhausted,.status.expired{color:#b45309}
.pager{margin:1rem 0;display:flex;gap:1rem}${INVISIBLE_STYLE}`;

type Section = 'approvals' | 'reviews' | 'runs' | 'overview';

/** The console's frame around a page's body: its navigation, who is signed in, its style. */
export function page(title: string, body: SafeHtml, viewer?: Viewer, current?: Section, extraStyle: SafeHtml | '' = ''): string {
  const link = (section: Section, text: string) =>
    html`<a href="/console/${section}"${current === section ? html` aria-current="page"` : ''}>${text}</a>`;
  const nav = viewer
    ? html`<nav>${[
        hasRole(viewer.principal, 'approver') ? link('approvals', 'Approvals') : '',
        hasRole(viewer.principal, 'reviewer') ? link('reviews', 'Reviews') : '',
        mayListRuns(viewer.principal) ? link('runs', 'Runs') : '',
        hasRole(viewer.principal, 'reviewer') ? link('overview', 'Overview') : '',
      ]}</nav>
<span class="who">Signed in as <strong>${visible(viewer.principal.id)}</strong></span>
<form method="post" action="/console/logout">${csrfField(viewer)}<button type="submit" name="logout" value="1">Sign out</button></form>`
    : html`<nav></nav>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title} · Tool runner console</title><style>${STYLE}${extraStyle}</style></head>
<body><header><span class="brand">Tool runner console</span>${nav}</header>
<main id="console">${body}</main></body></html>`.toString();
}

/** Agents list their own runs; reviewers and admins every run (`GET /v1/runs`). */
export function mayListRuns(principal: Principal): boolean {
  return hasRole(principal, 'agent') || hasRole(principal, 'reviewer');
}

function csrfField(viewer: Viewer): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${viewer.csrf}">`;
}

function banner(b: Banner | undefined): SafeHtml | '' {
  return b ? html`<p class="banner ${b.kind}" role="status">${visible(b.text)}</p>` : '';
}

function time(iso: string): SafeHtml {
  return html`<time datetime="${iso}">${visible(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>`;
}

function runLink(runId: string): SafeHtml {
  return html`<a href="/console/runs/${encodeURIComponent(runId)}"><code>${visible(runId)}</code></a>`;
}

/** The sign-in form: one field for the key. */
export function loginPage(problem?: string): string {
  return page(
    'Sign in',
    html`<h1>Sign in</h1>${problem ? banner({ kind: 'error', text: problem }) : ''}
<form class="card" method="post" action="/console/login">
<label for="key">Your key</label>
<input id="key" type="password" name="key" autocomplete="current-password" required maxlength="512">
<p class="muted">The key from the principals document (the one your scripts send as <code>Authorization: Bearer</code>). It is checked once; the console then keeps a signed session cookie for at most 8 hours, never the key itself.</p>
<button class="primary" type="submit">Sign in</button>
</form>`,
  );
}

/** An answer that is not a page of the console's own (a refusal, an error), in the console's frame. */
export function messagePage(title: string, message: string, viewer?: Viewer): string {
  return page(title, html`<h1>${visible(title)}</h1><p>${visible(message)}</p>`, viewer);
}

/** Who an `approvalEscalation` step asked or reminded, and when (nothing before the first step). */
function escalationLines(a: Approval): SafeHtml | string {
  if (!a.escalations?.length) return '';
  const names = (ids: string[]) => ids.join(', ');
  const items = a.escalations.map(
    (e) =>
      html`<li>${time(e.at)}: ${e.escalated.length ? html`escalated to ${visible(names(e.escalated))}` : ''}${
        e.escalated.length && e.reminded.length ? '; ' : ''
      }${e.reminded.length ? html`reminded ${visible(names(e.reminded))}` : ''}</li>`,
  );
  return html`<dt>Reminders</dt><dd class="escalations"><ul>${items}</ul></dd>
`;
}

/** Pending approvals this approver may decide, oldest first, with the amounts as the approval page shows them. */
export function approvalsPage(viewer: Viewer, approvals: Approval[], tools: (name: string) => ToolSpec | undefined, note?: Banner): string {
  // An approver never decides on its own runs, so the run is someone else's: only a reviewer (or admin) may open its timeline.
  const mayReadOthersRuns = hasRole(viewer.principal, 'reviewer');
  const cards = approvals.map((a) => {
    const tool = tools(a.toolName);
    const summary = summaryLines(tool, a.arguments, a.summary);
    const risk = tool?.risk;
    return html`<article class="card approval" id="${a.operationId}" data-operation-id="${a.operationId}">
<h2>Approve <code>${visible(a.toolName)}</code>?${risk ? html` <span class="risk">${visible(risk)}</span>` : ''}</h2>
${summary.length ? html`<ul class="summary">${summary.map((line) => html`<li>${visible(line)}</li>`)}</ul>` : ''}
${risk ? html`<p class="muted">This tool ${RISK_TEXT[risk]}.</p>` : ''}
<dl>
<dt>Requested by</dt><dd>${visible(a.requestedBy)}</dd>
${a.policies ? html`<dt>Policies</dt><dd class="policies">${visible(policiesLine(a.policies))}</dd>\n` : ''}<dt>Run</dt><dd>${mayReadOthersRuns ? runLink(a.runId) : html`<code>${visible(a.runId)}</code>`}</dd>
<dt>Operation</dt><dd><code>${visible(a.operationId)}</code></dd>
<dt>Expires</dt><dd>${time(a.expiresAt)}</dd>
${escalationLines(a)}<dt>Arguments hash</dt><dd><code>${visible(a.inputHash)}</code></dd>
</dl>
${argumentList(a.arguments, tool?.secretFields, { level: 'h3' })}
<form method="post" action="/console/approvals/${encodeURIComponent(a.operationId)}">${csrfField(viewer)}
<label for="reason-${a.operationId}">Reason (optional)</label>
<input id="reason-${a.operationId}" type="text" name="reason" maxlength="500">
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button>
</form>
</article>`;
  });
  return page(
    'Approvals',
    html`<h1>Pending approvals</h1>${banner(note)}
${cards.length ? joinHtml(cards, '\n') : html`<p class="card muted" id="empty">Nothing waits for your approval.</p>`}`,
    viewer,
    'approvals',
    ARGUMENT_LIST_STYLE,
  );
}

/** Operations whose outcome is unknown and that only a person can settle, oldest first. */
export function reviewsPage(viewer: Viewer, reviews: Review[], note?: Banner): string {
  const cards = reviews.map(
    (r) => html`<article class="card review" id="${r.operationId}" data-operation-id="${r.operationId}">
<h2><code>${visible(r.toolName)}</code>: outcome unknown</h2>
<p>${visible(r.reason)}</p>
<dl>
<dt>Run</dt><dd>${runLink(r.runId)}</dd>
<dt>Operation</dt><dd><code>${visible(r.operationId)}</code></dd>
<dt>Waiting since</dt><dd>${time(r.since)}</dd>
</dl>
<form method="post" action="/console/reviews/${encodeURIComponent(r.operationId)}">${csrfField(viewer)}
<label for="note-${r.operationId}">What you found upstream</label>
<textarea id="note-${r.operationId}" name="note" required maxlength="2000"></textarea>
<button class="succeeded" type="submit" name="outcome" value="succeeded">It succeeded</button>
<button class="failed" type="submit" name="outcome" value="failed">It failed</button>
</form>
</article>`,
  );
  return page(
    'Reviews',
    html`<h1>Open reviews</h1>${banner(note)}
<p class="muted">Look the effect up where the tool acts, then record what you found: the model is told the outcome you settle.</p>
${cards.length ? joinHtml(cards, '\n') : html`<p class="card muted" id="empty">No operation waits for a review.</p>`}`,
    viewer,
    'reviews',
  );
}

export const RUN_STATUSES = ['open', 'cancelled', 'budget_exhausted', 'expired'] as const;

/** One page of runs, newest first, with a status filter and a link to the next (older) page. */
export function runsPage(viewer: Viewer, runs: RunsPage, query: { status?: string; cursor?: string }): string {
  const rows = runs.runs.map(
    (r) => html`<tr data-run-id="${r.runId}"><td>${runLink(r.runId)}</td><td class="status ${r.status}">${visible(r.status)}</td>
<td>${visible(r.owner)}</td><td>${time(r.createdAt)}</td><td class="num">${r.usage.toolCalls}</td><td class="num">${r.usage.turns}</td><td class="num">${visible(formatCents(r.usage.spendCents))}</td></tr>`,
  );
  const options = ['', ...RUN_STATUSES].map(
    (s) =>
      html`<option value="${s}"${(query.status ?? '') === s ? html` selected` : ''}>${s ? s.replace('_', ' ') : 'any status'}</option>`,
  );
  const params = (cursor?: string) => {
    const p = new URLSearchParams();
    if (query.status) p.set('status', query.status);
    if (cursor) p.set('cursor', cursor);
    const text = p.toString();
    return text ? `?${text}` : '';
  };
  const pager = [
    query.cursor ? html`<a href="/console/runs${params()}">Newest runs</a>` : '',
    runs.nextCursor ? html`<a rel="next" href="/console/runs${params(runs.nextCursor)}">Older runs →</a>` : '',
  ];
  return page(
    'Runs',
    html`<h1>Runs</h1>
<form method="get" action="/console/runs"><label for="status">Status</label><select id="status" name="status">${options}</select> <button type="submit">Show</button></form>
${
  rows.length
    ? html`<table id="runs"><thead><tr><th>Run</th><th>Status</th><th>Owner</th><th>Created</th><th>Tool calls</th><th>Turns</th><th>Spend</th></tr></thead><tbody>
${joinHtml(rows, '\n')}
</tbody></table>`
    : html`<p class="card muted" id="empty">No runs to show.</p>`
}
<p class="pager">${pager}</p>`,
    viewer,
    'runs',
  );
}

/** A run's timeline: the API's own timeline (`GET /v1/runs/{runId}/timeline`) inside the console's frame. */
export function runPage(viewer: Viewer, runId: string, timeline: string): string {
  return page(
    `Run ${runId}`,
    // The timeline is the API's own rendered `<main>` (timelineMainOf), already escaped there.
    html`<p><a href="/console/runs">← Runs</a></p><h1>Run <code>${visible(runId)}</code></h1>
${raw(timeline)}`,
    viewer,
    'runs',
    TIMELINE_STYLE,
  );
}
