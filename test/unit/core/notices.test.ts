import { describe, expect, it } from 'vitest';
import {
  approvalRequestedNotice,
  approvalRequestedPayload,
  approvalSummary,
  noticeSubject,
  noticeText,
} from '../../../functions/core/notices';

const request = {
  approvalId: 'apr_1',
  operationId: 'op_1',
  runId: 'run_1',
  toolName: 'charge_card',
  requestedBy: 'agent',
  summary: 'agent asks to run charge_card.',
  expiresAt: '2026-12-01T12:00:00.000Z',
  links: [
    { approverId: 'alice', url: 'https://runner/v1/approvals/apr_1?sig=alice' },
    { approverId: 'bob', url: 'https://runner/v1/approvals/apr_1?sig=bob' },
  ],
};

describe('notices', () => {
  it('summarize a request without its arguments, with its cost in dollars', () => {
    expect(approvalSummary({ toolName: 'charge_card', runId: 'run_1', risk: 'irreversible_write', costCents: 70_000 }, 'agent')).toBe(
      "agent asks to run charge_card (irreversible write) in run run_1; it counts $700.00 against the run's spend budget.",
    );
  });

  it('give each approver its own link only, and anyone else no link at all', () => {
    expect(approvalRequestedPayload(request, request.links[1])).toMatchObject({ type: 'approval.requested', url: request.links[1].url });
    const notice = approvalRequestedNotice(request);
    expect(notice).toMatchObject({ approvers: ['alice', 'bob'] });
    expect(JSON.stringify(notice)).not.toContain('sig=');
    expect(noticeText(notice)).not.toContain('sig=');
    expect(noticeSubject(notice)).toBe('Approval requested: charge_card');
  });

  it('say where a person acts on a review', () => {
    const review = {
      type: 'review.required' as const,
      operationId: 'op_1',
      runId: 'run_1',
      toolName: 'send_email',
      reason: 'unknown outcome',
    };
    expect(noticeText(review as never)).toContain('POST /v1/operations/op_1/resolve');
  });
});
