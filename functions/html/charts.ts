import { html, type SafeHtml } from './safe-html';

/**
 * Charts as inline SVG, drawn on the server (the console runs no script): each with axes, labels and a legend,
 * and beside it a visually hidden table of the same numbers, which screen readers read and tests check. The
 * picture is `aria-hidden`: the table is what it says.
 */

export interface Series {
  name: string;
  color: string;
}

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 56;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 34;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

/** The style the charts need, for the page's `<style>`. */
export const CHART_STYLE = html`.chart svg{width:100%;max-width:${WIDTH}px;height:auto;display:block;background:#fff}
.chart text{font:11px system-ui,sans-serif;fill:#334155}.chart .axis{stroke:#94a3b8}.chart .grid{stroke:#e2e8f0}
.legend{display:flex;flex-wrap:wrap;gap:.4rem 1rem;margin:.4rem 0 0;padding:0;list-style:none;font-size:13px}
.legend span{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}
.visually-hidden{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}`;

/** A round upper bound for an axis (1, 2 or 5 times a power of ten) at or above `max`. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return ([1, 2, 5, 10].map((m) => m * power).find((v) => v >= max) ?? 10 * power) as number;
}

const fmt = (n: number) => String(Number(n.toFixed(2)));

function legend(series: readonly Series[]): SafeHtml {
  return html`<ul class="legend">${series.map((s) => html`<li><span style="background:${s.color}"></span>${s.name}</li>`)}</ul>`;
}

function yAxis(top: number, unit: string): SafeHtml {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ value: top * f, y: TOP + PLOT_H - f * PLOT_H }));
  return html`${ticks.map(
    (t) =>
      html`<line class="grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${t.y}" y2="${t.y}"></line><text x="${LEFT - 6}" y="${t.y + 4}" text-anchor="end">${fmt(t.value)}</text>`,
  )}<text x="12" y="${TOP + PLOT_H / 2}" transform="rotate(-90 12 ${TOP + PLOT_H / 2})" text-anchor="middle">${unit}</text>
<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${TOP}" y2="${TOP + PLOT_H}"></line><line class="axis" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${TOP + PLOT_H}" y2="${TOP + PLOT_H}"></line>`;
}

/** About six labels along the x axis, at evenly spaced bars. */
function xLabels(labels: readonly string[], x: (i: number) => number): SafeHtml {
  const every = Math.max(1, Math.ceil(labels.length / 6));
  return html`${labels.map((label, i) =>
    i % every === 0 || i === labels.length - 1
      ? html`<text x="${x(i)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle">${label}</text>`
      : '',
  )}`;
}

/** Words across an empty plot, so an empty chart does not read as a broken one. */
function empty(isEmpty: boolean): SafeHtml | '' {
  return isEmpty ? html`<text x="${LEFT + PLOT_W / 2}" y="${TOP + PLOT_H / 2}" text-anchor="middle">nothing in this window</text>` : '';
}

function hiddenTable(id: string, caption: string, head: readonly string[], rows: readonly (readonly (string | number)[])[]): SafeHtml {
  // Hidden by its wrapper: a table grows past any height it is given, and would lengthen the page.
  return html`<div class="visually-hidden"><table id="${id}"><caption>${caption}</caption><thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((row) => html`<tr>${row.map((cell, i) => (i === 0 ? html`<th scope="row">${cell}</th>` : html`<td>${cell}</td>`))}</tr>`)}</tbody></table></div>`;
}

/** Bars over time, each stacked by series (calls by outcome), with the table of every bar's values. */
export function stackedBarChart(input: {
  id: string;
  title: string;
  unit: string;
  series: readonly Series[];
  bars: readonly { label: string; values: readonly number[] }[];
}): SafeHtml {
  const { bars, series } = input;
  const top = niceCeiling(Math.max(0, ...bars.map((b) => b.values.reduce((a, v) => a + v, 0))));
  const slot = PLOT_W / Math.max(1, bars.length);
  const x = (i: number) => LEFT + slot * i + slot / 2;
  const width = Math.max(1, slot * 0.8);
  const rects = bars.map((bar, i) => {
    let base = TOP + PLOT_H;
    return series.map((s, k) => {
      const h = (bar.values[k] / top) * PLOT_H;
      if (!h) return '';
      base -= h;
      return html`<rect x="${(x(i) - width / 2).toFixed(2)}" y="${base.toFixed(2)}" width="${width.toFixed(2)}" height="${h.toFixed(2)}" fill="${s.color}"></rect>`;
    });
  });
  return html`<figure class="chart"><figcaption>${input.title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-hidden="true">${yAxis(top, input.unit)}${rects}${empty(bars.every((b) => b.values.every((v) => !v)))}${xLabels(
    bars.map((b) => b.label),
    x,
  )}</svg>${legend(series)}
${hiddenTable(
  input.id,
  input.title,
  ['Time', ...series.map((s) => s.name)],
  bars.map((b) => [b.label, ...b.values]),
)}</figure>`;
}

/** Lines over time (p50 and p95), a gap where a point has no value, with the table of every point. */
export function lineChart(input: {
  id: string;
  title: string;
  unit: string;
  series: readonly Series[];
  points: readonly { label: string; values: readonly (number | undefined)[] }[];
}): SafeHtml {
  const { points, series } = input;
  const top = niceCeiling(Math.max(0, ...points.flatMap((p) => p.values.filter((v): v is number => v !== undefined))));
  const slot = PLOT_W / Math.max(1, points.length);
  const x = (i: number) => LEFT + slot * i + slot / 2;
  const y = (v: number) => TOP + PLOT_H - (v / top) * PLOT_H;
  const lines = series.map((s, k) => {
    const runs: string[] = [];
    let current = '';
    for (const [i, p] of points.entries()) {
      const v = p.values[k];
      if (v === undefined) {
        if (current) runs.push(current);
        current = '';
        continue;
      }
      current += `${current ? 'L' : 'M'}${x(i).toFixed(2)} ${y(v).toFixed(2)} `;
    }
    if (current) runs.push(current);
    const dots = points.map((p, i) =>
      p.values[k] === undefined
        ? ''
        : html`<circle cx="${x(i).toFixed(2)}" cy="${y(p.values[k]!).toFixed(2)}" r="2.5" fill="${s.color}"></circle>`,
    );
    return html`${runs.map((d) => html`<path d="${d.trim()}" fill="none" stroke="${s.color}" stroke-width="2"></path>`)}${dots}`;
  });
  return html`<figure class="chart"><figcaption>${input.title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-hidden="true">${yAxis(top, input.unit)}${lines}${empty(points.every((p) => p.values.every((v) => v === undefined)))}${xLabels(
    points.map((p) => p.label),
    x,
  )}</svg>${legend(series)}
${hiddenTable(
  input.id,
  input.title,
  ['Time', ...series.map((s) => s.name)],
  points.map((p) => [p.label, ...p.values.map((v) => (v === undefined ? '' : v))]),
)}</figure>`;
}

/** Horizontal bars by name (spend by tool, by model), largest first, with the table of their values. */
export function barChart(input: {
  id: string;
  title: string;
  unit: string;
  color: string;
  bars: readonly { label: string; value: number; text: string }[];
}): SafeHtml {
  const bars = [...input.bars].sort((a, b) => b.value - a.value);
  const rowH = 26;
  const labelW = 170;
  const height = TOP + Math.max(1, bars.length) * rowH + BOTTOM;
  const plot = WIDTH - labelW - RIGHT - 90;
  const top = niceCeiling(Math.max(0, ...bars.map((b) => b.value)));
  const body = bars.length
    ? bars.map((b, i) => {
        const y = TOP + i * rowH;
        const w = (b.value / top) * plot;
        return html`<text x="${labelW - 6}" y="${y + 17}" text-anchor="end">${b.label}</text><rect x="${labelW}" y="${y + 5}" width="${w.toFixed(2)}" height="${rowH - 10}" fill="${input.color}"></rect><text x="${(labelW + w + 6).toFixed(2)}" y="${y + 17}">${b.text}</text>`;
      })
    : html`<text x="${labelW}" y="${TOP + 17}">nothing spent in this window</text>`;
  const axisY = TOP + Math.max(1, bars.length) * rowH;
  return html`<figure class="chart"><figcaption>${input.title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${height}" role="img" aria-hidden="true">${body}
<line class="axis" x1="${labelW}" x2="${labelW}" y1="${TOP}" y2="${axisY}"></line><line class="axis" x1="${labelW}" x2="${labelW + plot}" y1="${axisY}" y2="${axisY}"></line>
<text x="${labelW}" y="${axisY + 16}" text-anchor="middle">0</text><text x="${labelW + plot}" y="${axisY + 16}" text-anchor="middle">${fmt(top)}</text><text x="${labelW + plot / 2}" y="${axisY + 30}" text-anchor="middle">${input.unit}</text></svg>
${legend([{ name: input.unit, color: input.color }])}
${hiddenTable(
  input.id,
  input.title,
  ['Name', input.unit],
  bars.map((b) => [b.label, b.text]),
)}</figure>`;
}
