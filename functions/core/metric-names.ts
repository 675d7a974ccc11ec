import type { TraceEvent, NewTraceEvent } from './trace';

/**
 * The runner's metrics, named once: the EMF metrics on AWS and the local registry use these names and
 * dimensions, so a dashboard built on one reads the other.
 */
export const MetricName = {
  /** Settled calls, by `tool` and `outcome` (succeeded, rejected, failed_permanent, budget_exhausted, cancelled…). */
  toolCalls: 'ToolCalls',
  /** Attempts sent to a tool, by `tool`. */
  attempts: 'ToolAttempts',
  /** Backoffs before another attempt, by `tool` and `reason` (transient, lock_busy, reconcile). */
  retries: 'ToolRetries',
  /** Attempts whose effect is unknown (a timeout after the request left), by `tool`. */
  unknownOutcomes: 'UnknownOutcomes',
  /**
   * A gauge, never a running count: approvals pending and not expired, as the store holds them now
   * (published by the sweeper). No dimensions.
   */
  approvalsWaiting: 'ApprovalsWaiting',
  /** A gauge: operations waiting for a reviewer's resolution, as the store holds them now (published by the sweeper). */
  reviewsOpen: 'ReviewsOpen',
  /**
   * A gauge: seconds since the oldest operation past its lease came due and is still not resumed (0 when none),
   * as the watch holds it after a sweep (published by the sweeper). No dimensions.
   */
  operationBacklogAge: 'OperationBacklogAge',
  /** Spend crossing 50%, 80% or 100% of a limit, by `scope` (run, principal) and `percent`: once each. */
  budgetThresholds: 'BudgetThresholds',
  /** Runs stopped by a budget (calls, turns, spend or wall clock), by `tool` (the call that hit it) and `status`. */
  budgetStops: 'BudgetStops',
  /** Duplicate submissions answered from the stored operation, by `tool`. */
  replays: 'ToolCallReplays',
  /** A callId reused with different arguments (409), by `tool`. */
  conflicts: 'CallIdConflicts',
  /** Results that arrived after their call was cancelled, by `tool`. */
  lateResults: 'LateResults',
  /**
   * Deliveries to people that failed after their retries, by `channel` (`webhook`, `sns`, `console`): an
   * approver's webhook, an SNS publish of a link or a notice (adapters/notifier.ts). An alarm watches it.
   */
  notificationFailures: 'NotificationFailures',
  /**
   * A gauge: how much of its time to live the oldest pending approval has used, in percent (0 when none),
   * published by the sweeper. Past 50 a person has half the TTL left to decide before the call expires.
   */
  oldestApprovalTtlUsed: 'OldestApprovalTtlUsed',
  /**
   * Step Functions API calls of this runner refused by throttling, by `api` (StartExecution, SendTaskSuccess…),
   * each refused attempt counted. The runner counts them itself: AWS/States' own figure is the account's.
   */
  statesApiThrottled: 'StatesApiThrottled',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/**
 * The `tool` dimension of a name that is not a registered tool. Every distinct dimension value is a new
 * CloudWatch metric (billed each month), and the name of a refused call is whatever an agent sent: so only
 * registered names become values, and the rest share this one.
 */
export const UNKNOWN_TOOL_DIMENSION = '<unknown>';

/** The `tool` dimension for `toolName`: itself when it is registered, else `<unknown>`. */
export function toolDimension(toolName: string, registered: (name: string) => boolean): string {
  return registered(toolName) ? toolName : UNKNOWN_TOOL_DIMENSION;
}

export interface MetricCount {
  name: MetricName;
  dimensions: Record<string, string>;
  value: number;
}

/**
 * The counts a write's trace events stand for. Derived from the events (not from the code paths that emit
 * them), so every way an operation moves — step, sweeper, API — is counted once, where it is committed.
 */
export function metricsOfEvents(toolName: string, events: readonly (TraceEvent | NewTraceEvent)[]): MetricCount[] {
  const tool = { tool: toolName };
  const out: MetricCount[] = [];
  const add = (name: MetricName, dimensions: Record<string, string> = tool, value = 1) => out.push({ name, dimensions, value });
  for (const event of events) {
    const detail = event.detail ?? {};
    switch (event.type) {
      case 'result.recorded':
        add(MetricName.toolCalls, { ...tool, outcome: String(detail.outcome ?? 'unknown') });
        break;
      case 'attempt.started':
        add(MetricName.attempts);
        break;
      case 'backoff.scheduled':
        add(MetricName.retries, { ...tool, reason: String(detail.reason ?? 'unknown') });
        break;
      case 'state.transition':
        if (event.to === 'outcome_unknown') add(MetricName.unknownOutcomes);
        break;
      case 'budget.exhausted':
        add(MetricName.budgetStops, { ...tool, status: String(detail.status ?? 'budget_exhausted') });
        break;
      case 'operation.replayed':
        add(MetricName.replays);
        break;
      case 'call.conflict':
        add(MetricName.conflicts);
        break;
      case 'result.late':
        add(MetricName.lateResults);
        break;
    }
  }
  return out;
}

/**
 * The percent of its time to live a pending approval has used at `now`, measured from its operation's
 * creation (an approval is requested as the call is admitted), rounded down, within 0..100.
 */
export function approvalTtlUsed(createdAt: string, expiresAt: string, now: string): number {
  const start = Date.parse(createdAt);
  const ttl = Date.parse(expiresAt) - start;
  if (!(ttl > 0)) return 100;
  return Math.min(100, Math.max(0, Math.floor(((Date.parse(now) - start) / ttl) * 100)));
}
