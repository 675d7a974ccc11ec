import { describe, expect, it } from 'vitest';
import { memoryMetrics } from '../../functions/adapters/metrics';
import { approvalTtlUsed, MetricName } from '../../functions/core/metric-names';
import type { OperationRecord } from '../../functions/core/model';
import type { Store } from '../../functions/core/ports';
import { publishGauges } from '../../functions/steps/gauges';
import { operation } from '../support/records';

/** Just what the gauges read of a store: counts, and the operations past their lease. */
function storeWith(due: OperationRecord[]): Store {
  return {
    countWaiting: async () => ({ approvalsWaiting: 2, reviewsOpen: 1, oldestApprovalTtlUsed: 63 }),
    listExpiredLeases: async (_now: string, limit: number) => due.slice(0, limit),
  } as unknown as Store;
}

describe('the sweeper’s gauges', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const past = (seconds: number) => new Date(now - seconds * 1000).toISOString();

  it('publish the age of the oldest operation still past its lease, and 0 when none is', async () => {
    const metrics = memoryMetrics();
    const due = [operation({ operationId: 'op_a', leaseUntil: past(30) }), operation({ operationId: 'op_b', leaseUntil: past(91) })];
    expect(await publishGauges({ store: storeWith(due), metrics, now: () => now })).toEqual({
      approvalsWaiting: 2,
      reviewsOpen: 1,
      oldestApprovalTtlUsed: 63,
      operationBacklogAge: 91,
    });
    expect(metrics.snapshot().find((m) => m.name === MetricName.oldestApprovalTtlUsed)?.value).toBe(63);
    expect(metrics.snapshot().find((m) => m.name === MetricName.operationBacklogAge)?.value).toBe(91);
    expect((await publishGauges({ store: storeWith([]), metrics, now: () => now })).operationBacklogAge).toBe(0);
  });

  it('publish how much of its TTL the oldest pending approval has used, from its creation to its expiry', () => {
    expect(approvalTtlUsed('2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', '2026-12-01T12:00:00Z')).toBe(50);
    expect(approvalTtlUsed('2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', '2026-12-01T11:59:00Z')).toBe(49);
    expect(approvalTtlUsed('2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', '2026-12-03T00:00:00Z')).toBe(100);
  });
});
