import { ErrorCode, LogLevel, WebClient } from '@slack/web-api';
import { backoffMs } from '../core/backoff';
import type { SlackConfig } from '../core/config';

/** One Web API call's limit; the backoff below stays within the RequestApproval Lambda's 30 s (infra/functions.ts). */
export const SLACK_CALL_TIMEOUT_MS = 5_000;

/**
 * The official client making one attempt per call: retries are the runner's (`withSlackBackoff`), so a
 * rate limit or an outage cannot hold a request for the client's own minutes-long schedule.
 */
export function slackClient(config: Pick<SlackConfig, 'botToken' | 'apiUrl'>): WebClient {
  return new WebClient(config.botToken, {
    ...(config.apiUrl ? { slackApiUrl: config.apiUrl.endsWith('/') ? config.apiUrl : `${config.apiUrl}/` } : {}),
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: SLACK_CALL_TIMEOUT_MS,
    // Every call goes to the configured API, whatever a method name looks like.
    allowAbsoluteUrls: false,
    logLevel: LogLevel.ERROR,
  });
}

export interface SlackBackoffPolicy {
  maxAttempts: number;
  baseMs: number;
  capMs: number;
  /** No retry starts later than this after the first attempt. */
  deadlineMs: number;
}

export const SLACK_BACKOFF: SlackBackoffPolicy = { maxAttempts: 4, baseMs: 500, capMs: 4_000, deadlineMs: 15_000 };

/** Whether Slack may answer differently later: rate limited, its own 5xx, or no answer at all. A platform error (`channel_not_found`) will not. */
export function slackRetryAfterMs(error: unknown): number | undefined {
  const e = error as { code?: string; retryAfter?: number; statusCode?: number };
  if (e?.code === ErrorCode.RateLimitedError) return Math.max(0, (e.retryAfter ?? 1) * 1000);
  if (e?.code === ErrorCode.HTTPError) return (e.statusCode ?? 0) >= 500 ? 0 : undefined;
  if (e?.code === ErrorCode.RequestError) return 0;
  return undefined;
}

/** `call` with capped exponential backoff and full jitter, Retry-After as a floor; the last error is thrown. */
export async function withSlackBackoff<T>(
  call: () => Promise<T>,
  options: { policy?: Partial<SlackBackoffPolicy>; now?: () => number; random?: () => number } = {},
): Promise<T> {
  const policy = { ...SLACK_BACKOFF, ...options.policy };
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const start = now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const floor = slackRetryAfterMs(error);
      if (floor === undefined || attempt >= policy.maxAttempts) throw error;
      const delay = Math.max(backoffMs(attempt + 1, policy, random), floor);
      if (now() + delay - start > policy.deadlineMs) throw error;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** What a Slack error says, for a log line: its code and Slack's `error`, never the token. */
export function slackProblem(error: unknown): string {
  const e = error as { code?: string; data?: { error?: string }; statusCode?: number; retryAfter?: number; message?: string };
  if (e?.data?.error) return `${e.code}: ${e.data.error}`;
  if (e?.statusCode) return `${e.code}: HTTP ${e.statusCode}`;
  if (e?.retryAfter !== undefined) return `${e.code}: retry after ${e.retryAfter} s`;
  return e?.message ?? String(error);
}
