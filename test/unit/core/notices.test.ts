import { describe, expect, it } from 'vitest';
import { argumentsForApprover } from '../../../functions/core/approval-view';
import {
  approvalRequestedNotice,
  approvalRequestedPayload,
  approvalRequestText,
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

  it("write an approver's email with the tool's lines, each argument as the page shows it, the hash, and its own link last", () => {
    const args = argumentsForApprover({ amount: 60_000, card: '4242 4242 4242 4242', password: 'correct horse', note: 'n'.repeat(300) }, [
      'password',
    ]);
    const text = approvalRequestText(
      { ...request, approvalLines: ['Charge $600.00 to cus_1'], inputHash: 'sha256:abc', arguments: args },
      request.links[0].url,
    );
    expect(text.split('\n')).toEqual([
      'agent asks to run charge_card.',
      'Charge $600.00 to cus_1',
      'Arguments:',
      '  amount: 60000',
      '  card: ••••4242',
      '  password: ••••',
      `  note: ${'n'.repeat(200)}… (300 bytes)`,
      'Arguments hash sha256:abc',
      'Review the exact operation and decide before 2026-12-01T12:00:00.000Z:',
      request.links[0].url,
    ]);
    expect(text).not.toMatch(/correct horse|4242 4242|sig=bob/);
    // Without the view (a tool whose secret fields could not be learnt), no arguments at all.
    expect(approvalRequestText(request, request.links[1].url)).toBe(
      `agent asks to run charge_card.\nReview the exact operation and decide before 2026-12-01T12:00:00.000Z:\n${request.links[1].url}`,
    );
  });

  it("keep an approver's email within the size SNS takes: what does not fit is left to the page, and said so", () => {
    const many = argumentsForApprover(Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`field${i}`, 'v'.repeat(150)])));
    const text = approvalRequestText({ ...request, inputHash: 'sha256:abc', arguments: many }, request.links[0].url);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(256 * 1024);
    const shown = text.split('\n').filter((l) => l.startsWith('  field')).length;
    expect(shown).toBeGreaterThan(1000);
    expect(shown).toBeLessThan(3000);
    expect(text).toContain(`  (${3000 - shown} more on the approval page)\nArguments hash sha256:abc`);
    expect(text.endsWith(request.links[0].url)).toBe(true);
    const tight = approvalRequestText({ ...request, arguments: many }, request.links[0].url, 1_000);
    expect(Buffer.byteLength(tight)).toBeLessThanOrEqual(1_000);
    expect(tight.endsWith(request.links[0].url)).toBe(true);
    // A tool's own lines are bounded the same way, before the arguments.
    const wordy = approvalRequestText(
      { ...request, approvalLines: Array.from({ length: 5000 }, (_, i) => `line ${i} ${'w'.repeat(100)}`), arguments: many },
      request.links[0].url,
    );
    expect(Buffer.byteLength(wordy)).toBeLessThanOrEqual(256 * 1024);
    expect(wordy).toMatch(/\n\(\d+ more lines on the approval page\)\nArguments:\n {2}\(3000 more on the approval page\)\n/);
    expect(wordy.endsWith(request.links[0].url)).toBe(true);
  });
});
