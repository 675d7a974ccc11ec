import { describe, expect, it } from 'vitest';
import { approvalRequestedNotice, approvalRequestedPayload, approverArguments, noticeText } from '../../functions/core/notices';

const op = {
  inputHash: 'sha256:args',
  approvalLines: ['Open an account for ann@example.com'],
  frozenArguments: JSON.stringify({ email: 'ann@example.com', password: 'hunter2', card: '4242424242424242', note: 'n'.repeat(201) }),
};
const request = {
  approvalId: 'apr_1',
  operationId: 'op_1',
  runId: 'run_1',
  toolName: 'create_account',
  requestedBy: 'agent',
  summary: 'agent asks to run create_account.',
  expiresAt: '2026-12-01T12:00:00.000Z',
  links: [{ approverId: 'alice', url: 'https://runner/v1/approvals/apr_1?sig=alice' }],
  ...approverArguments(op, ['password']),
};

describe('the webhook payload of an approval request', () => {
  it('carries the arguments as an approver reads them, their hash and the tool’s lines, beside every field it had', () => {
    const payload = approvalRequestedPayload(request, request.links[0]);
    expect(payload).toEqual({
      type: 'approval.requested',
      approvalId: 'apr_1',
      operationId: 'op_1',
      runId: 'run_1',
      toolName: 'create_account',
      summary: 'agent asks to run create_account.',
      url: 'https://runner/v1/approvals/apr_1?sig=alice',
      expiresAt: '2026-12-01T12:00:00.000Z',
      inputHash: 'sha256:args',
      approvalLines: ['Open an account for ann@example.com'],
      arguments: [
        { path: 'email', text: 'ann@example.com', shown: 'exact' },
        { path: 'password', text: '••••', shown: 'secret' },
        { path: 'card', text: '••••4242', shown: 'card' },
        { path: 'note', text: `${'n'.repeat(200)}…`, shown: 'folded', bytes: 201 },
      ],
    });
    expect(JSON.stringify(payload)).not.toContain('hunter2');
  });

  it('leaves the arguments out of the link-free notice anyone may follow', () => {
    const notice = approvalRequestedNotice(request);
    expect(Object.keys(notice).sort()).toEqual([
      'approvalId',
      'approvers',
      'expiresAt',
      'operationId',
      'requestedBy',
      'runId',
      'summary',
      'toolName',
      'type',
    ]);
    expect(noticeText(notice)).not.toContain('ann@example.com');
  });

  it('gives no arguments when the operation kept none, or when the tool’s secret fields could not be learnt', () => {
    expect(approverArguments({ inputHash: 'sha256:x' }, [])).toEqual({ inputHash: 'sha256:x', approvalLines: [] });
    expect(approverArguments(op, undefined)).toEqual({ inputHash: 'sha256:args', approvalLines: op.approvalLines });
  });
});
