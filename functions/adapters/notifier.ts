import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { Notifier } from '../core/ports';

/** An operation whose outcome is unknown and that only a person can settle (`GET /v1/reviews?status=open`). */
export type ReviewNotice = Parameters<NonNullable<Notifier['reviewRequired']>>[0];
type ReviewNotifier = Required<Pick<Notifier, 'reviewRequired'>>;

function reviewText(m: ReviewNotice): string {
  return `review needed: ${m.toolName} ${m.operationId} (run ${m.runId}): ${m.reason}. Resolve with POST /v1/operations/${m.operationId}/resolve`;
}

/** Approvers subscribe to an SNS topic (email, chat, a queue); each message carries that approver's link. */
export function snsNotifier(client: SNSClient, topicArn: string): Notifier & ReviewNotifier {
  return {
    async reviewRequired(m) {
      await client.send(
        new PublishCommand({
          TopicArn: topicArn,
          Subject: `Review needed: ${m.toolName}`.slice(0, 99),
          Message: reviewText(m),
          MessageAttributes: { kind: { DataType: 'String', StringValue: 'review' } },
        }),
      );
    },
    async approvalRequested(m) {
      for (const link of m.links) {
        await client.send(
          new PublishCommand({
            TopicArn: topicArn,
            Subject: `Approval needed: ${m.toolName}`.slice(0, 99),
            Message: `${m.requestedBy} asks to run ${m.toolName} (operation ${m.operationId}).\nReview and decide before ${m.expiresAt}:\n${link.url}`,
            MessageAttributes: { approverId: { DataType: 'String', StringValue: link.approverId } },
          }),
        );
      }
    },
  };
}

/** Locally the notification is printed; `GET /v1/approvals?status=pending` lists the same links. */
export function consoleNotifier(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Notifier & ReviewNotifier {
  return {
    async reviewRequired(m) {
      write(reviewText(m));
    },
    async approvalRequested(m) {
      write(`approval needed: ${m.toolName} ${m.operationId} requested by ${m.requestedBy}, expires ${m.expiresAt}`);
      for (const link of m.links) write(`  for ${link.approverId}: ${link.url}`);
    },
  };
}
