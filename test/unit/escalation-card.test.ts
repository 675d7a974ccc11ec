import { describe, expect, it } from 'vitest';
import type { Approval } from '../../functions/client';
import { approvalsPage } from '../../functions/console/pages';

/** The console's approval card says who an escalation step asked or reminded, and when. */
const viewer = { principal: { id: 'alice', roles: ['approver' as const], tools: [] }, csrf: 'csrf-token' };
const approval: Approval = {
  approvalId: 'ap_1',
  operationId: 'op_1',
  runId: 'run_1',
  toolName: 'charge_card',
  arguments: { amount: 500 },
  inputHash: 'h'.repeat(64),
  requestedBy: 'agent',
  expiresAt: '2026-12-08T08:00:00.000Z',
  url: 'http://runner/v1/approvals/ap_1?sig=x',
};
const text = (page: string) =>
  page
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

describe('the approval card', () => {
  it('lists each reminder and escalation step sent, with its time and people', () => {
    const page = approvalsPage(
      viewer,
      [
        {
          ...approval,
          escalations: [
            { step: 0, at: '2026-12-07T08:10:00.000Z', escalated: ['bob'], reminded: ['alice'] },
            { step: 1, at: '2026-12-07T08:30:00.000Z', escalated: ['root', 'admin'], reminded: ['alice', 'bob'] },
          ],
        },
      ],
      () => undefined,
    );
    const card = text(page);
    expect(card).toContain('Reminders');
    expect(card).toMatch(/2026-12-07[ T]08:10[^:]*.*escalated to bob; reminded alice/);
    expect(card).toMatch(/08:30.*escalated to root, admin; reminded alice, bob/);
  });

  it('says nothing of reminders before the first step', () => {
    expect(text(approvalsPage(viewer, [approval], () => undefined))).not.toContain('Reminders');
  });
});
