import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import { backoffMs } from '../core/backoff';
import { MetricName } from '../core/metric-names';
import {
  approvalRequestedNotice,
  approvalRequestedPayload,
  approvalRequestText,
  escalationPrefix,
  type Notice,
  noticeSubject,
  noticeText,
  type ApprovalRequestedPayload,
} from '../core/notices';
import type { ApprovalRequest, ApprovalSettledNotice, ConfigSource, Metrics, Notifier } from '../core/ports';
import { signWebhookBody, WEBHOOK_SIGNATURE_HEADER } from '../core/webhook-signature';
import { defaultLog } from '../core/log';
import type { BudgetThresholdNotice } from '../core/budget-thresholds';

/**
 * The notifier port as channels: each approver's link reaches that approver alone (its webhook, its
 * filtered subscription of the links topic, the local output), and link-free notices reach everyone else
 * (the notices topic, the local output). Every channel is tried; a delivery that fails is counted as
 * `NotificationFailures{channel}` and logged, never thrown: the request itself is durable and listed by
 * `GET /v1/approvals`, `GET /v1/reviews` and the console.
 */

/** The `channel` dimension of `NotificationFailures`. */
export type ChannelName = 'webhook' | 'sns' | 'console' | 'slack';

/** One way of reaching people. Each method resolves to how many of its deliveries failed. */
export interface NotificationChannel {
  readonly name: ChannelName;
  /** Delivers each approver's link to that approver only. */
  approvalRequested?(request: ApprovalRequest): Promise<number>;
  /** Delivers a link-free notice to whoever follows the runner. */
  notice?(notice: Notice): Promise<number>;
  /** Updates what this channel posted about an approval once its call settled. */
  approvalSettled?(notice: ApprovalSettledNotice): Promise<number>;
  /** Delivers a spend threshold to the run's owner and the admins who have a channel of their own here. */
  budgetThreshold?(notice: BudgetThresholdNotice): Promise<number>;
}

type Log = (line: Record<string, unknown>) => void;
const warn: Log = ({ message, ...fields }) => defaultLog().warn(String(message), fields);

/** The notifier over its channels; `metrics` counts failed deliveries per channel. */
export function makeNotifier(channels: readonly NotificationChannel[], options: { metrics?: Metrics; log?: Log } = {}): Required<Notifier> {
  const log = options.log ?? warn;
  /** Runs every channel's deliveries for one notice side by side; a part that throws counts as one failure. */
  async function each(
    notice: { type: Notice['type'] | 'approval.settled'; operationId?: string },
    parts: (channel: NotificationChannel) => (() => Promise<number> | undefined)[],
  ): Promise<void> {
    await Promise.all(
      channels.map(async (channel) => {
        let failed = 0;
        const errors: string[] = [];
        // One after the other within a channel: the notice, then the links (the local output reads in that order).
        for (const part of parts(channel)) {
          try {
            failed += (await part()) ?? 0;
          } catch (error) {
            failed += 1;
            errors.push(error instanceof Error ? error.message : String(error));
          }
        }
        if (failed === 0) return;
        options.metrics?.count(MetricName.notificationFailures, { channel: channel.name }, failed);
        log({
          message: 'notification failed',
          channel: channel.name,
          type: notice.type,
          operationId: 'operationId' in notice ? notice.operationId : undefined,
          failed,
          errors,
        });
      }),
    );
  }
  const notify = (notice: Notice) => each(notice, (channel) => [() => channel.notice?.(notice)]);
  return {
    approvalRequested(request) {
      const notice = approvalRequestedNotice(request);
      return each(notice, (channel) => [() => channel.notice?.(notice), () => channel.approvalRequested?.(request)]);
    },
    approvalDecided: (notice) => notify({ type: 'approval.decided', ...notice }),
    // Every channel that delivers links (webhooks, SNS, Slack, the local output) gets the step, to its approvers only.
    approvalEscalated: (request) => each(approvalRequestedNotice(request), (channel) => [() => channel.approvalRequested?.(request)]),
    reviewRequired: (notice) => notify({ type: 'review.required', ...notice }),
    approvalSettled: (notice) =>
      each({ type: 'approval.settled', operationId: notice.operationId }, (channel) => [() => channel.approvalSettled?.(notice)]),
    budgetThreshold(threshold) {
      const notice: Notice = { type: 'budget.threshold', ...threshold };
      return each(notice, (channel) => [() => channel.notice?.(notice), () => channel.budgetThreshold?.(threshold)]);
    },
  };
}

/** How many of `tasks` rejected. */
async function failures(tasks: Promise<unknown>[]): Promise<number> {
  return (await Promise.allSettled(tasks)).filter((r) => r.status === 'rejected').length;
}

/**
 * SNS on AWS. The links topic has only the subscriptions the construct's `approvers` prop creates, each
 * filtered on the `approverId` message attribute every message to it carries, so a link reaches the
 * approver it is signed for. The notices topic gets link-free notices, for anyone.
 */
export function snsChannel(client: SNSClient, topics: { linksTopicArn?: string; noticesTopicArn?: string }): NotificationChannel {
  const { linksTopicArn, noticesTopicArn } = topics;
  return {
    name: 'sns',
    approvalRequested: linksTopicArn
      ? (request) =>
          failures(
            request.links.map((link) =>
              client.send(
                new PublishCommand({
                  TopicArn: linksTopicArn,
                  Subject: `${escalationPrefix(request)}Approval needed: ${request.toolName}`.slice(0, 99),
                  Message: approvalRequestText(request, link.url),
                  MessageAttributes: {
                    approverId: { DataType: 'String', StringValue: link.approverId },
                    type: { DataType: 'String', StringValue: 'approval.requested' },
                  },
                }),
              ),
            ),
          )
      : undefined,
    notice: noticesTopicArn
      ? (notice) =>
          failures([
            client.send(
              new PublishCommand({
                TopicArn: noticesTopicArn,
                Subject: noticeSubject(notice).slice(0, 99),
                Message: noticeText(notice),
                MessageAttributes: { type: { DataType: 'String', StringValue: notice.type } },
              }),
            ),
          ])
      : undefined,
  };
}

/** Locally the notices and each approver's link are printed (`GET /v1/approvals?status=pending` lists the same links). */
export function consoleChannel(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): NotificationChannel {
  return {
    name: 'console',
    async notice(notice) {
      write(noticeText(notice));
      return 0;
    },
    async approvalRequested(request) {
      const prefix = escalationPrefix(request);
      if (prefix) write(`${prefix}approval ${request.approvalId} (${request.toolName}) still waits`);
      for (const link of request.links) write(`  for ${link.approverId}: ${link.url}`);
      return 0;
    },
  };
}

/** How a webhook request is retried: capped exponential backoff with full jitter, within a deadline. */
export interface WebhookDeliveryPolicy {
  maxAttempts: number;
  /** One attempt's limit: connecting, sending and the receiver's answer. */
  attemptTimeoutMs: number;
  baseMs: number;
  capMs: number;
  /** No attempt starts with less than this left before the deadline. */
  minAttemptMs: number;
  /**
   * Every attempt of a request ends within this from the first: the RequestApproval Lambda (30 s,
   * infra/functions.ts) still has its time for the rest (test/unit/webhook-delivery.test.ts checks both).
   */
  deadlineMs: number;
}

export const WEBHOOK_DELIVERY: WebhookDeliveryPolicy = {
  maxAttempts: 5,
  attemptTimeoutMs: 5_000,
  baseMs: 500,
  capMs: 4_000,
  minAttemptMs: 1_000,
  deadlineMs: 20_000,
};

/** Statuses worth another attempt: the receiver was busy or failing, not refusing. */
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

export interface WebhookOptions {
  /** The principals document: each approver's `notify: { webhookUrl, secret }`, read when a request is sent. */
  config: ConfigSource;
  fetch?: typeof fetch;
  now?: () => number;
  random?: () => number;
  policy?: Partial<WebhookDeliveryPolicy>;
  log?: Log;
}

/**
 * Each approver with `notify` gets a POST of its own `approval.requested` payload (its own link only),
 * signed with its own `notify.secret` (`Toolrunner-Signature`). Deliveries to several approvers run side by
 * side, so a slow receiver delays no one else.
 */
export function webhookChannel(options: WebhookOptions): NotificationChannel {
  const policy = { ...WEBHOOK_DELIVERY, ...options.policy };
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const log = options.log ?? warn;

  async function deliver(
    target: { webhookUrl: string; secret: string },
    payload: ApprovalRequestedPayload | ThresholdPayload,
  ): Promise<boolean> {
    const body = JSON.stringify(payload);
    const deadline = now() + policy.deadlineMs;
    const host = new URL(target.webhookUrl).host;
    let lastProblem = '';
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      const left = deadline - now();
      if (left < policy.minAttemptMs) break;
      let retryAfterMs = 0;
      try {
        const res = await doFetch(target.webhookUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'toolrunner-webhooks/1',
            // Signed per attempt: a retry carries a fresh timestamp the receiver accepts.
            [WEBHOOK_SIGNATURE_HEADER]: signWebhookBody(target.secret, body, now()),
          },
          body,
          // A redirect could carry the link elsewhere; the configured URL is the only destination.
          redirect: 'manual',
          signal: AbortSignal.timeout(Math.min(policy.attemptTimeoutMs, left)),
        });
        await res.body?.cancel().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) return true;
        lastProblem = `HTTP ${res.status}`;
        if (!RETRYABLE_STATUS.has(res.status)) break;
        retryAfterMs = retryAfterOf(res.headers.get('retry-after'));
      } catch (error) {
        lastProblem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      if (attempt === policy.maxAttempts) break;
      const delay = Math.max(backoffMs(attempt + 1, policy, random), retryAfterMs);
      if (now() + delay + policy.minAttemptMs > deadline) break;
      await new Promise((r) => setTimeout(r, delay));
    }
    // The host only: a webhook URL's path or query may be a credential of the receiver's.
    log({
      message: 'webhook delivery failed',
      host,
      operationId: 'operationId' in payload ? payload.operationId : undefined,
      problem: lastProblem,
    });
    return false;
  }

  return {
    name: 'webhook',
    async approvalRequested(request) {
      const principals = new Map((await options.config()).principals.map((p) => [p.id, p]));
      const deliveries = request.links.flatMap((link) => {
        const notify = principals.get(link.approverId)?.notify;
        return notify ? [deliver(notify, approvalRequestedPayload(request, link))] : [];
      });
      return (await Promise.all(deliveries)).filter((ok) => !ok).length;
    },
    async budgetThreshold(notice) {
      // The run's owner and every admin, each once, through its own signed webhook.
      const targets = (await options.config()).principals.filter((p) => p.id === notice.principalId || p.roles.includes('admin'));
      const payload: ThresholdPayload = { type: 'budget.threshold', ...notice };
      const deliveries = targets.flatMap((p) => (p.notify ? [deliver(p.notify, payload)] : []));
      return (await Promise.all(deliveries)).filter((ok) => !ok).length;
    },
  };
}

/** What a `budget.threshold` webhook carries. */
type ThresholdPayload = { type: 'budget.threshold' } & BudgetThresholdNotice;

/** `Retry-After` in seconds (the HTTP-date form is not worth the parsing here), as milliseconds; 0 if absent. */
function retryAfterOf(header: string | null): number {
  const seconds = header && /^\d{1,4}$/.test(header.trim()) ? Number(header.trim()) : 0;
  return seconds * 1000;
}
