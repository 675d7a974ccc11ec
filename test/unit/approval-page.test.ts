import { describe, expect, it } from 'vitest';
import { approvalPage } from '../../functions/html/approval-page';
import { PAGE_SECURITY_HEADERS } from '../../functions/html/page-basics';
import { visibleText } from '../../functions/html/safe-html';
import type { OperationRecord } from '../../functions/core/model';
import { formatMinorUnits } from '../../functions/core/format';
import { makeDemoTools } from '../../functions/tools/demo-tools';

const chargeCard = makeDemoTools('http://127.0.0.1:1').find((t) => t.name === 'charge_card')!;
const op = (over: Partial<OperationRecord> = {}): OperationRecord => ({
  schemaVersion: 1,
  operationId: 'op_1',
  runId: 'run_1',
  callId: 'call_1',
  turn: 1,
  toolName: 'charge_card',
  principalId: 'agent',
  state: 'awaiting_approval',
  risk: 'irreversible_write',
  frozenArguments: JSON.stringify({ amount: 123456, currency: 'EUR', customer: 'cus_1', description: 'pay \u202Eexe.jpg' }),
  inputHash: 'sha256:x',
  idempotencyKey: 'idk_x',
  attempts: 0,
  createdAt: '',
  updatedAt: '',
  version: 1,
  resumes: 0,
  approval: { approvalId: 'apr_1', state: 'pending', expiresAt: '2026-01-01T00:00:00.000Z' },
  ...over,
});

describe('the approval page', () => {
  it('shows bidi overrides, zero-width and control characters instead of letting them act', () => {
    expect(visibleText('a\u202Eb\u200Bc\u0007d\u2066e\u{E0041}')).toBe(
      ['a', 'U+202E', 'b', 'U+200B', 'c', 'U+0007', 'd', 'U+2066', 'e', 'U+E0041']
        .map((p) => (p.startsWith('U+') ? `<span class="cc">&lt;${p}&gt;</span>` : p))
        .join(''),
    );
    expect(visibleText('tab\tand\nnewline <b>')).toBe('tab\tand\nnewline &lt;b&gt;');
  });

  it('formats integer minor units with their currency', () => {
    expect(formatMinorUnits(123456, 'EUR')).toBe('€1,234.56');
    expect(formatMinorUnits(5000, 'JPY')).toBe('¥5,000');
    expect(formatMinorUnits(50000, 'USD')).toBe('$500.00');
  });

  it('says what the call does, why a person is asked, and, once decided, who decided and when', () => {
    const html = approvalPage(op(), 'approver', 'sig', '/v1/approvals/apr_1', chargeCard);
    expect(html).toContain('Charge €1,234.56 (123456 in minor units of EUR) to customer cus_1.');
    expect(html).toContain('A rule in the policy of this tool asks a person to approve a call with these arguments.');
    expect(html).toContain('has an effect that cannot be undone');
    expect(html).toContain('&lt;U+202E&gt;');
    expect(html).not.toContain('\u202E');
    const decided = approvalPage(
      op({
        state: 'executing',
        approval: {
          approvalId: 'apr_1',
          state: 'approved',
          expiresAt: '2026-01-01T00:00:00.000Z',
          decidedBy: 'approver',
          decidedAt: '2025-12-31T10:00:00.000Z',
        },
      }),
      'approver',
      'sig',
      '/a',
      chargeCard,
    );
    expect(decided).toContain('Decided (approved) by <strong>approver</strong> at <time datetime="2025-12-31T10:00:00.000Z">');
    expect(decided).not.toContain('<form');
  });

  it('declares a policy with no scripts, no framing and no referrer', () => {
    expect(PAGE_SECURITY_HEADERS['Content-Security-Policy']).toMatch(/default-src 'none'/);
    expect(PAGE_SECURITY_HEADERS['Content-Security-Policy']).toMatch(/frame-ancestors 'none'/);
    expect(PAGE_SECURITY_HEADERS['X-Frame-Options']).toBe('DENY');
    expect(PAGE_SECURITY_HEADERS['Referrer-Policy']).toBe('no-referrer');
  });
});
