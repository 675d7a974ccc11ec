import { MetricName } from '../core/metric-names';
import type { RecoveryStore, ReviewQueries, WithStore } from '../core/ports';

/**
 * Publishes `ApprovalsWaiting` and `ReviewsOpen` as absolute values counted in the store now, so they
 * cannot drift: an expiry, a decision, a crash between a write and its count, or a restart that empties
 * an in-process registry changes nothing about what the next publication says. The sweeper runs it
 * after each sweep (on AWS every minute; locally on the sweep interval).
 */
export async function publishGauges(
  deps: Pick<WithStore<ReviewQueries & RecoveryStore>, 'store' | 'metrics' | 'now'>,
  /** What a sweeper that walked the watch itself left due (the oldest entry's time, none when it drained it). */
  left?: { oldestDue?: string },
): Promise<{ approvalsWaiting: number; reviewsOpen: number; oldestApprovalTtlUsed: number; operationBacklogAge: number }> {
  const now = new Date(deps.now()).toISOString();
  const { oldestApprovalTtlUsed = 0, ...counts } = await deps.store.countWaiting(now);
  deps.metrics?.gauge(MetricName.approvalsWaiting, {}, counts.approvalsWaiting);
  deps.metrics?.gauge(MetricName.reviewsOpen, {}, counts.reviewsOpen);
  // An approval nobody decides expires and its call fails: someone is paged while half its time is left.
  deps.metrics?.gauge(MetricName.oldestApprovalTtlUsed, {}, oldestApprovalTtlUsed);
  // What the sweep left due: the age of the oldest, so a backlog that only grows pages someone.
  const due = left
    ? left.oldestDue
      ? [{ leaseUntil: left.oldestDue }]
      : []
    : (await deps.store.listExpiredLeases(now, BACKLOG_SAMPLE)).map((op) => ({ leaseUntil: op.leaseUntil }));
  const oldest = Math.min(...due.map((op) => Date.parse(op.leaseUntil ?? now)));
  const operationBacklogAge = due.length ? Math.max(0, Math.round((deps.now() - oldest) / 1000)) : 0;
  deps.metrics?.gauge(MetricName.operationBacklogAge, {}, operationBacklogAge);
  return { ...counts, oldestApprovalTtlUsed, operationBacklogAge };
}

/** The due entries looked at for the backlog's age: the watch keeps them by due time in each shard, so the first few hold the oldest. */
const BACKLOG_SAMPLE = 25;
