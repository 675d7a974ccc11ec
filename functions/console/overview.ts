import { centsOfMicros } from '../core/spend';
import type { ReviewQueries, RollupStore } from '../core/ports';
import {
  emptyMinute,
  LATENCY_BUCKETS_MS,
  minutesOfWindow,
  type OverviewWindow,
  overviewWindow,
  quantileOf,
  ROLLUP_OUTCOMES,
  type RollupMinute,
  type RollupOutcome,
} from '../core/rollups';
import { CHART_STYLE, barChart, lineChart, type Series, stackedBarChart } from '../html/charts';
import { html, visible } from '../html/safe-html';
import { page, type Viewer } from './pages';

/** What the overview reads: the rollups of its window, and the sparse indexes of what waits for people. */
export type OverviewStore = RollupStore & Pick<ReviewQueries, 'countWaiting' | 'listPendingApprovals'>;

/** At most this many bars across a chart: a longer window groups its minutes into bars of several. */
const MAX_BARS = 120;

export interface OverviewFigures {
  window: OverviewWindow;
  minutes: number;
  notice?: string;
  /** Minutes a bar groups. */
  barMinutes: number;
  bars: { label: string; start: string; calls: Record<RollupOutcome, number>; p50?: number; p95?: number }[];
  totals: Record<RollupOutcome, number>;
  /** Over the window, calls that needed no person (ms, a bucket's upper bound; Infinity: over the last bound). */
  p50?: number;
  p95?: number;
  noPersonCalls: number;
  waitedForPerson: number;
  approvalsWaiting: number;
  oldestApprovalAgeSeconds?: number;
  unknownWaiting: number;
  toolSpendMicros: Record<string, number>;
  modelSpendMicros: Record<string, number>;
}

/**
 * The overview's figures at `now`: at most one rollup item per minute of the window, the counts of the
 * `pendingApprovals` and `openReviews` indexes, and the oldest pending approval (the first of the index).
 */
export async function readOverview(
  store: OverviewStore,
  now: number,
  asked: string | undefined,
  retentionDays: number,
): Promise<OverviewFigures> {
  const { window, minutes, notice } = overviewWindow(asked, retentionDays);
  const keys = minutesOfWindow(now, minutes);
  const nowIso = new Date(now).toISOString();
  const [items, waiting, oldest] = await Promise.all([
    store.readRollups(keys[0], keys[keys.length - 1]),
    store.countWaiting(nowIso),
    // The oldest pending approval, whoever requested it.
    store.listPendingApprovals({ approverId: null, now: nowIso, limit: 1 }),
  ]);
  const byMinute = new Map(items.map((m) => [m.minute, m]));
  const barMinutes = Math.ceil(minutes / MAX_BARS);
  const bars: OverviewFigures['bars'] = [];
  const whole = emptyMinute(keys[0]);
  for (let i = 0; i < keys.length; i += barMinutes) {
    const group = emptyMinute(keys[i]);
    for (const key of keys.slice(i, i + barMinutes)) addInto(group, byMinute.get(key));
    addInto(whole, group);
    bars.push({
      label: labelOf(keys[i], minutes),
      start: keys[i],
      calls: group.calls,
      p50: finite(quantileOf(group.latency, 0.5)),
      p95: finite(quantileOf(group.latency, 0.95)),
    });
  }
  const oldestCreated = oldest.items[0]?.createdAt;
  return {
    window,
    minutes,
    ...(notice ? { notice } : {}),
    barMinutes,
    bars,
    totals: whole.calls,
    p50: quantileOf(whole.latency, 0.5),
    p95: quantileOf(whole.latency, 0.95),
    noPersonCalls: whole.latency.reduce((a, b) => a + b, 0),
    waitedForPerson: whole.waitedForPerson,
    approvalsWaiting: waiting.approvalsWaiting,
    ...(oldestCreated ? { oldestApprovalAgeSeconds: Math.max(0, Math.round((now - Date.parse(oldestCreated)) / 1000)) } : {}),
    unknownWaiting: waiting.reviewsOpen,
    toolSpendMicros: whole.toolSpendMicros,
    modelSpendMicros: whole.modelSpendMicros,
  };
}

function addInto(sum: RollupMinute, m: RollupMinute | undefined): void {
  if (!m) return;
  for (const o of ROLLUP_OUTCOMES) sum.calls[o] += m.calls[o];
  for (const [i, n] of m.latency.entries()) sum.latency[i] += n;
  sum.waitedForPerson += m.waitedForPerson;
  for (const [k, v] of Object.entries(m.toolSpendMicros)) sum.toolSpendMicros[k] = (sum.toolSpendMicros[k] ?? 0) + v;
  for (const [k, v] of Object.entries(m.modelSpendMicros)) sum.modelSpendMicros[k] = (sum.modelSpendMicros[k] ?? 0) + v;
}

/** A chart's point needs a number: the open last bucket draws at the bound before it. */
const finite = (ms: number | undefined) => (ms === Infinity ? LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 2] : ms);

/** `HH:MM` within a day; with the date over longer windows. */
function labelOf(minute: string, windowMinutes: number): string {
  return windowMinutes > 1440 ? `${minute.slice(5, 10)} ${minute.slice(11)}` : minute.slice(11);
}

export const OUTCOME_SERIES: Record<RollupOutcome, Series> = {
  succeeded: { name: 'succeeded', color: '#15803d' },
  failed: { name: 'failed', color: '#b91c1c' },
  rejected: { name: 'rejected', color: '#d97706' },
  outcome_unknown: { name: 'outcome unknown', color: '#7c3aed' },
  budget_exhausted: { name: 'budget exhausted', color: '#0369a1' },
  cancelled: { name: 'cancelled', color: '#64748b' },
};

function duration(ms: number | undefined): string {
  if (ms === undefined) return 'no calls';
  if (ms === Infinity) return `over ${LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 2] / 1000} s`;
  return ms < 1000 ? `≤ ${ms} ms` : `≤ ${ms / 1000} s`;
}

function age(seconds: number | undefined): string {
  if (seconds === undefined) return 'none';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

const cents = (micros: number) => `${centsOfMicros(micros)} ¢`;

const OVERVIEW_STYLE = html`${CHART_STYLE}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));gap:.75rem;margin:0 0 1rem}
.figure{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:.6rem .9rem}.figure dt{font-weight:600;color:#475569;font-size:.85rem}
.figure dd{margin:0;font-size:1.35rem;font-weight:700}.figure dd small{font-size:.8rem;font-weight:400;color:#64748b}
.windows{display:flex;gap:.6rem;margin:0 0 1rem}.windows a[aria-current=page]{font-weight:700;text-decoration:none;color:#111}
figure{margin:0}figcaption{font-weight:600;margin:0 0 .4rem}`;

/** The overview page: the figures at the top, then the charts, each with its hidden table. */
export function overviewPage(viewer: Viewer, f: OverviewFigures): string {
  const total = ROLLUP_OUTCOMES.reduce((a, o) => a + f.totals[o], 0);
  const per = f.barMinutes === 1 ? 'minute' : `${f.barMinutes} minutes`;
  const windows = (['15m', '1h', '6h', '24h', '7d'] as const).map(
    (w) => html`<a href="/console/overview?window=${w}"${w === f.window ? html` aria-current="page"` : ''}>${w}</a>`,
  );
  const spend = (id: string, title: string, color: string, micros: Record<string, number>) =>
    barChart({
      id,
      title,
      unit: 'cents',
      color,
      bars: Object.entries(micros).map(([name, m]) => ({ label: name, value: centsOfMicros(m), text: cents(m) })),
    });
  const summary: [string, string, string][] = [
    ['calls', 'Calls', String(total)],
    ['p50', 'p50 to the envelope', duration(f.p50)],
    ['p95', 'p95 to the envelope', duration(f.p95)],
    ['approvals-waiting', 'Approvals waiting', String(f.approvalsWaiting)],
    ['oldest-approval', 'Oldest approval waiting', age(f.oldestApprovalAgeSeconds)],
    ['unknown-waiting', 'Unknown outcomes waiting', String(f.unknownWaiting)],
  ];
  const body = html`<h1>Overview <small class="muted">last ${f.window}</small></h1>
${f.notice ? html`<p class="banner error" role="status">${visible(f.notice)}</p>` : ''}
<nav class="windows" aria-label="Window">${windows}</nav>
<dl class="figures">${summary.map(([id, label, value]) => html`<div class="figure" data-figure="${id}"><dt>${label}</dt><dd>${value}</dd></div>`)}</dl>
<div class="visually-hidden"><table id="overview-figures"><caption>Figures of the last ${f.window}</caption><tbody>${summary.map(
    ([id, label, value]) => html`<tr data-figure="${id}"><th scope="row">${label}</th><td>${value}</td></tr>`,
  )}</tbody></table></div>
<section class="card">${stackedBarChart({
    id: 'calls-by-outcome',
    title: `Calls per ${per} by outcome`,
    unit: `calls per ${per}`,
    series: ROLLUP_OUTCOMES.map((o) => OUTCOME_SERIES[o]),
    bars: f.bars.map((b) => ({ label: b.label, values: ROLLUP_OUTCOMES.map((o) => b.calls[o]) })),
  })}</section>
<section class="card">${lineChart({
    id: 'time-to-envelope',
    title: 'Time to the envelope, calls that needed no person (ms, upper bound of the bucket)',
    unit: 'ms',
    series: [
      { name: 'p50', color: '#2563eb' },
      { name: 'p95', color: '#dc2626' },
    ],
    points: f.bars.map((b) => ({ label: b.label, values: [b.p50, b.p95] })),
  })}<p class="muted">${f.noPersonCalls} calls needed no person; ${f.waitedForPerson} waited for an approver and are not in these figures.</p></section>
<section class="card">${spend('spend-by-tool', 'Spend by tool', '#0f766e', f.toolSpendMicros)}</section>
<section class="card">${spend('spend-by-model', 'Spend by model', '#9333ea', f.modelSpendMicros)}</section>`;
  return page('Overview', body, viewer, 'overview', OVERVIEW_STYLE);
}
