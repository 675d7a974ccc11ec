import type { WebClient } from '@slack/web-api';
import type { SlackConfig } from '../core/config';
import { defaultLog } from '../core/log';
import type { OperationRecord, SlackMessageRef } from '../core/model';
import type { ApprovalRequest, ConfigSource } from '../core/ports';
import type { NotificationChannel } from '../adapters/notifier';
import { type SlackBackoffPolicy, slackClient, slackProblem, withSlackBackoff } from './client';
import { approvalMessage } from './message';

export interface SlackChannelOptions {
  config: ConfigSource;
  /** The operation as stored: the message is drawn from it, never from the notification alone. */
  operation(operationId: string): Promise<OperationRecord | undefined>;
  /** The tool's `secretFields` (masked whole in the message); undefined when this process does not know the tool. */
  secretFields(toolName: string): readonly string[] | undefined;
  /** Keeps where the messages went with the approval, so later updates reach each of them. */
  noteMessages(operationId: string, messages: SlackMessageRef[]): Promise<void>;
  client?: (slack: SlackConfig) => WebClient;
  backoff?: Partial<SlackBackoffPolicy>;
  log?: (message: string, fields: Record<string, unknown>) => void;
}

/** One client per token and API base; a changed config document gets a new one. */
export function cachedSlackClient(): (slack: SlackConfig) => WebClient {
  let cached: { key: string; client: WebClient } | undefined;
  return (slack) => {
    const key = `${slack.botToken}\n${slack.apiUrl ?? ''}`;
    if (cached?.key !== key) cached = { key, client: slackClient(slack) };
    return cached.client;
  };
}

/**
 * Approvals in Slack: each request is posted (Block Kit) to every approver with a `slackUserId` in that
 * approver's direct messages, or once to `slack.channel`; where each went is kept with the approval, and
 * each is updated when the approval is decided or expires and again when the call settles. A failed call to
 * Slack is retried with backoff, then counted by the notifier as `NotificationFailures{channel=slack}`.
 */
export function slackChannel(options: SlackChannelOptions): NotificationChannel {
  const clientFor = options.client ?? cachedSlackClient();
  const log = options.log ?? ((message, fields) => defaultLog().warn(message, fields));
  const call = <T>(what: string, operationId: string, fn: () => Promise<T>): Promise<T> =>
    withSlackBackoff(fn, { policy: options.backoff }).catch((error) => {
      log('slack call failed', { call: what, operationId, problem: slackProblem(error) });
      throw error;
    });

  async function refresh(operationId: string): Promise<number> {
    const slack = (await options.config()).slack;
    const op = slack && (await options.operation(operationId));
    const refs = op?.approval?.slackMessages ?? [];
    if (!slack || !op || refs.length === 0) return 0;
    const client = clientFor(slack);
    const message = approvalMessage(op, op.secretFields ?? options.secretFields(op.toolName));
    const updates = refs.map((ref) =>
      call('chat.update', operationId, () =>
        client.chat.update({ channel: ref.channel, ts: ref.ts, text: message.text, blocks: message.blocks }),
      ),
    );
    return (await Promise.allSettled(updates)).filter((r) => r.status === 'rejected').length;
  }

  return {
    name: 'slack',
    async approvalRequested(request: ApprovalRequest) {
      const config = await options.config();
      const slack = config.slack;
      if (!slack) return 0;
      const op = await options.operation(request.operationId);
      if (!op?.approval) return 1;
      const client = clientFor(slack);
      const message = approvalMessage(op, op.secretFields ?? options.secretFields(op.toolName));
      const principals = new Map(config.principals.map((p) => [p.id, p]));
      const members = request.links.flatMap((l) => principals.get(l.approverId)?.slackUserId ?? []);
      // The channel, or each approver's direct messages (opened by the bot, `im:write`).
      const targets: (() => Promise<string>)[] = slack.channel
        ? [async () => slack.channel!]
        : members.map((user) => async () => {
            const opened = await call('conversations.open', op.operationId, () => client.conversations.open({ users: user }));
            return opened.channel!.id!;
          });
      const posted = await Promise.allSettled(
        targets.map(async (target) => {
          const channel = await target();
          const res = await call('chat.postMessage', op.operationId, () =>
            client.chat.postMessage({ channel, text: message.text, blocks: message.blocks, unfurl_links: false, unfurl_media: false }),
          );
          return { channel: res.channel ?? channel, ts: res.ts! };
        }),
      );
      const refs = posted.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []));
      let failed = posted.length - refs.length;
      if (refs.length > 0)
        await options.noteMessages(op.operationId, refs).catch((error) => {
          failed += 1;
          log('slack messages not kept with the approval', { operationId: op.operationId, problem: (error as Error).message });
        });
      return failed;
    },
    async notice(notice) {
      return notice.type === 'approval.decided' ? refresh(notice.operationId) : 0;
    },
    approvalSettled: (notice) => refresh(notice.operationId),
  };
}
