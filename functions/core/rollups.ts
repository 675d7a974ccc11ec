import type { Envelope } from './envelope';
import type { OperationRecord } from './model';
import { microsOfCents } from './spend';

/**
 * Per-minute rollups for the console's overview: each call adds its outcome, its time to the envelope and its
 * spend to the item of the minute its envelope was recorded in, as counters a store adds in one write (an
 * `ADD` of every counter at once). The overview then reads one item per minute of its window, never the calls.
 */

/** The outcomes a call's envelope can carry, in the order charts stack them. */
export const ROLLUP_OUTCOMES = ['succeeded', 'failed', 'rejected', 'outcome_unknown', 'budget_exhausted', 'cancelled'] as const;
export type RollupOutcome = (typeof ROLLUP_OUTCOMES)[number] & Envelope['status'];

/**
 * Upper bounds (ms) of the time-to-envelope histogram's buckets; the last one holds everything slower. Fixed,
 * so minutes add up bucket by bucket and a percentile is read back as the bucket it falls in.
 */
export const LATENCY_BUCKETS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, Infinity] as const;

/** One minute, `YYYY-MM-DDTHH:MM` (UTC): sorts as time does. */
export type MinuteKey = string;

/** What one write adds to a minute's item: counters by name (see `countersOf`), and when the item may go. */
export interface RollupAddition {
  minute: MinuteKey;
  counters: Record<string, number>;
  /** The retention of what was counted: the item lives as long as the records it sums. */
  expiresAtEpoch?: number;
}

/** A minute's item read back. */
export interface RollupMinute {
  minute: MinuteKey;
  calls: Record<RollupOutcome, number>;
  /** Calls that needed no person, by `LATENCY_BUCKETS_MS` bucket. */
  latency: number[];
  /** Calls that waited for an approver: their time to the envelope is a person's, kept apart. */
  waitedForPerson: number;
  toolSpendMicros: Record<string, number>;
  modelSpendMicros: Record<string, number>;
}

const OUTCOME_PREFIX = 'c_';
const LATENCY_PREFIX = 'h_';
const TOOL_PREFIX = 't_';
const MODEL_PREFIX = 'm_';
const PERSON = 'p_waited';

export function minuteOf(epochMs: number): MinuteKey {
  return new Date(epochMs).toISOString().slice(0, 16);
}

export function epochOfMinute(minute: MinuteKey): number {
  return Date.parse(`${minute}:00.000Z`);
}

export function latencyBucket(ms: number): number {
  return LATENCY_BUCKETS_MS.findIndex((bound) => ms <= bound);
}

/**
 * The one addition a call makes, at the write that first gives it an envelope (`before` had none), or
 * undefined: a write that gives no envelope, or a second one (a reviewer's resolution after an unknown
 * outcome), adds nothing, so each call is counted once, as its caller first learned it.
 */
export function rollupOfReport(before: OperationRecord | undefined, after: OperationRecord, now: number): RollupAddition | undefined {
  if (before?.envelope || !after.envelope) return undefined;
  const status = after.envelope.status as RollupOutcome;
  const counters: Record<string, number> = { [`${OUTCOME_PREFIX}${status}`]: 1 };
  // An approver's wait is a person's time, not the runner's; an unknown outcome's review comes after its envelope.
  const person = Boolean(after.approvalRequired || after.approval);
  if (person) counters[PERSON] = 1;
  else counters[`${LATENCY_PREFIX}${latencyBucket(Math.max(0, now - Date.parse(after.createdAt)))}`] = 1;
  // A tool's cost is charged at admission; a call refused before it (no costCents) spent nothing.
  if (after.costCents) counters[`${TOOL_PREFIX}${after.toolName}`] = microsOfCents(after.costCents);
  return { minute: minuteOf(now), counters, ...(after.expiresAtEpoch ? { expiresAtEpoch: after.expiresAtEpoch } : {}) };
}

/** A model call's charge (settled, overrun or expired), added to the minute it was charged in. */
export function rollupOfModelCharge(
  model: string,
  chargedMicros: number,
  now: number,
  expiresAtEpoch?: number,
): RollupAddition | undefined {
  if (chargedMicros <= 0) return undefined;
  return { minute: minuteOf(now), counters: { [`${MODEL_PREFIX}${model}`]: chargedMicros }, ...(expiresAtEpoch ? { expiresAtEpoch } : {}) };
}

/** A stored item's counters (its other attributes ignored) as a minute. */
export function minuteOfCounters(minute: MinuteKey, item: Record<string, unknown>): RollupMinute {
  const out = emptyMinute(minute);
  for (const [name, value] of Object.entries(item)) {
    if (typeof value !== 'number') continue;
    if (name === PERSON) out.waitedForPerson += value;
    else if (name.startsWith(OUTCOME_PREFIX)) {
      const outcome = name.slice(OUTCOME_PREFIX.length) as RollupOutcome;
      if (outcome in out.calls) out.calls[outcome] += value;
    } else if (name.startsWith(LATENCY_PREFIX)) {
      const bucket = Number(name.slice(LATENCY_PREFIX.length));
      if (Number.isInteger(bucket) && bucket >= 0 && bucket < out.latency.length) out.latency[bucket] += value;
    } else if (name.startsWith(TOOL_PREFIX)) out.toolSpendMicros[name.slice(TOOL_PREFIX.length)] = value;
    else if (name.startsWith(MODEL_PREFIX)) out.modelSpendMicros[name.slice(MODEL_PREFIX.length)] = value;
  }
  return out;
}

export function emptyMinute(minute: MinuteKey): RollupMinute {
  return {
    minute,
    calls: Object.fromEntries(ROLLUP_OUTCOMES.map((o) => [o, 0])) as Record<RollupOutcome, number>,
    latency: LATENCY_BUCKETS_MS.map(() => 0),
    waitedForPerson: 0,
    toolSpendMicros: {},
    modelSpendMicros: {},
  };
}

/**
 * The `q` quantile (0..1) of a histogram, as the upper bound of the bucket it falls in (a bound, not an
 * interpolation: "95% of calls took at most this"); undefined when it is empty. The open last bucket reads as
 * the bound before it, marked by the caller as "over".
 */
export function quantileOf(histogram: readonly number[], q: number): number | undefined {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (!total) return undefined;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (const [i, n] of histogram.entries()) {
    seen += n;
    if (seen >= rank) return LATENCY_BUCKETS_MS[i];
  }
  return Infinity;
}

/** The windows the overview offers, in minutes. */
export const OVERVIEW_WINDOWS = { '15m': 15, '1h': 60, '6h': 360, '24h': 1440, '7d': 10_080 } as const;
export type OverviewWindow = keyof typeof OVERVIEW_WINDOWS;
export const DEFAULT_OVERVIEW_WINDOW: OverviewWindow = '1h';

/**
 * The window a request asked for: one of `OVERVIEW_WINDOWS`, else the default with a notice; and no longer
 * than the retention (the minutes before it are gone), with a notice when that shortened it.
 */
export function overviewWindow(
  asked: string | undefined,
  retentionDays: number,
): { window: OverviewWindow; minutes: number; notice?: string } {
  const known = asked !== undefined && Object.hasOwn(OVERVIEW_WINDOWS, asked);
  const window = known ? (asked as OverviewWindow) : DEFAULT_OVERVIEW_WINDOW;
  const retained = retentionDays * 1440;
  const minutes = Math.min(OVERVIEW_WINDOWS[window], retained);
  const notices = [
    asked !== undefined && !known ? `There is no window "${asked}"; showing the last ${DEFAULT_OVERVIEW_WINDOW}.` : '',
    minutes < OVERVIEW_WINDOWS[window] ? `Records are kept ${retentionDays} day${retentionDays === 1 ? '' : 's'}; showing those.` : '',
  ].filter(Boolean);
  return { window, minutes, ...(notices.length ? { notice: notices.join(' ') } : {}) };
}

/** The minutes of a window ending with the one `now` is in, oldest first. */
export function minutesOfWindow(now: number, minutes: number): MinuteKey[] {
  const last = epochOfMinute(minuteOf(now));
  return Array.from({ length: minutes }, (_, i) => minuteOf(last - (minutes - 1 - i) * 60_000));
}
