import { MetricName } from '../core/metric-names';
import type { Deps } from '../core/ports';

/**
 * Publishes `ApprovalsWaiting` and `ReviewsOpen` as absolute values counted in the store now, so they
 * cannot drift: an expiry, a decision, a crash between a write and its count, or a restart that empties
 * an in-process registry changes nothing about what the next publication says. The sweeper runs it
 * after each sweep (on AWS every minute; locally on the sweep interval).
 */
export async function publishGauges(
  deps: Pick<Deps, 'store' | 'metrics' | 'now'>,
): Promise<{ approvalsWaiting: number; reviewsOpen: number }> {
  const counts = await deps.store.countWaiting(new Date(deps.now()).toISOString());
  deps.metrics?.gauge(MetricName.approvalsWaiting, {}, counts.approvalsWaiting);
  deps.metrics?.gauge(MetricName.reviewsOpen, {}, counts.reviewsOpen);
  return counts;
}
