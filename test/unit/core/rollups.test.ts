import { describe, expect, it } from 'vitest';
import {
  LATENCY_BUCKETS_MS,
  latencyBucket,
  minuteOfCounters,
  minutesOfWindow,
  overviewWindow,
  quantileOf,
  rollupOfModelCharge,
  rollupOfReport,
} from '../../../functions/core/rollups';
import type { OperationRecord } from '../../../functions/core/model';
import { operation } from '../../support/records';

const created = Date.parse('2026-12-07T10:00:00.000Z');
const envelope = (status: string) => ({ status, call_id: 'c', logical_operation_id: 'o', message: '', allowed_next_actions: [] }) as never;
const reported = (extra: Partial<OperationRecord>) =>
  operation({
    createdAt: new Date(created).toISOString(),
    toolName: 'charge',
    envelope: envelope('succeeded'),
    expiresAtEpoch: 1_900_000_000,
    ...extra,
  });

describe('rollupOfReport', () => {
  it('adds a call once, at the write that first gives it an envelope, to the minute of that write', () => {
    const after = reported({ costCents: 12 });
    expect(rollupOfReport(operation({}), after, created + 1_234)).toEqual({
      minute: '2026-12-07T10:00',
      counters: { c_succeeded: 1, [`h_${latencyBucket(1_234)}`]: 1, t_charge: 12_000_000 },
      expiresAtEpoch: 1_900_000_000,
    });
    // A second envelope (a reviewer's resolution of an unknown outcome) adds nothing; nor does a write without one.
    expect(rollupOfReport(reported({}), reported({}), created + 5_000)).toBeUndefined();
    expect(rollupOfReport(undefined, operation({}), created)).toBeUndefined();
  });

  it("keeps an approver's wait out of the time to the envelope", () => {
    const after = reported({ approvalRequired: true, envelope: envelope('rejected') });
    expect(rollupOfReport(undefined, after, created + 90_000)?.counters).toEqual({ c_rejected: 1, p_waited: 1 });
  });

  it('a model charge adds to its model; nothing charged adds nothing', () => {
    expect(rollupOfModelCharge('gpt-4.1', 250, created + 61_000)).toEqual({ minute: '2026-12-07T10:01', counters: { 'm_gpt-4.1': 250 } });
    expect(rollupOfModelCharge('gpt-4.1', 0, created)).toBeUndefined();
  });
});

describe('reading minutes back', () => {
  it('parses counters, ignoring what is not one', () => {
    const m = minuteOfCounters('2026-12-07T10:00', { c_failed: 2, h_0: 1, h_99: 5, c_nonsense: 3, t_x: 7, p_waited: 1, shard: 'ignored' });
    expect(m.calls.failed).toBe(2);
    expect(m.latency[0]).toBe(1);
    expect(m.latency.reduce((a, b) => a + b)).toBe(1);
    expect(m.toolSpendMicros).toEqual({ x: 7 });
    expect(m.waitedForPerson).toBe(1);
  });

  it('reads a quantile as the upper bound of the bucket it falls in', () => {
    const h = LATENCY_BUCKETS_MS.map(() => 0);
    expect(quantileOf(h, 0.5)).toBeUndefined();
    h[latencyBucket(40)] = 90;
    h[latencyBucket(4_000)] = 10;
    expect(quantileOf(h, 0.5)).toBe(50);
    expect(quantileOf(h, 0.9)).toBe(50);
    expect(quantileOf(h, 0.95)).toBe(5_000);
    h[LATENCY_BUCKETS_MS.length - 1] = 1_000;
    expect(quantileOf(h, 0.95)).toBe(Infinity);
  });
});

describe('overviewWindow', () => {
  it('takes the windows it knows, the default with a notice otherwise, and never more than the retention', () => {
    expect(overviewWindow(undefined, 7)).toEqual({ window: '1h', minutes: 60 });
    expect(overviewWindow('7d', 7)).toEqual({ window: '7d', minutes: 10_080 });
    expect(overviewWindow('2h', 7)).toEqual({ window: '1h', minutes: 60, notice: 'There is no window "2h"; showing the last 1h.' });
    expect(overviewWindow('toString', 7).window).toBe('1h');
    expect(overviewWindow('7d', 1)).toEqual({ window: '7d', minutes: 1440, notice: 'Records are kept 1 day; showing those.' });
  });

  it('lists a window’s minutes oldest first, ending with the current one', () => {
    expect(minutesOfWindow(created + 59_999, 3)).toEqual(['2026-12-07T09:58', '2026-12-07T09:59', '2026-12-07T10:00']);
  });
});
