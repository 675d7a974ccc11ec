import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalsPage } from '../../functions/console/pages';
import type { OperationRecord } from '../../functions/core/model';
import { defineTool } from '../../functions/core/tool-spec';
import { approvalPage } from '../../functions/html/approval-page';

/** A tool whose arguments hold what an approver must not read in full: a secret, a card number, a long text. */
const createAccount = defineTool({
  name: 'create_account',
  description: 'Opens an account',
  inputSchema: z.object({ email: z.string(), password: z.string(), card: z.string(), note: z.string() }),
  outputSchema: z.object({ id: z.string() }),
  risk: 'irreversible_write',
  timeoutMs: 1000,
  maxAttempts: 1,
  supportsIdempotency: false,
  approval: 'always',
  secretFields: ['password'],
  describeForApproval: (input) => [`Open an account for ${input.email}`],
  execute: async () => ({ id: 'acct_1' }),
});
const args = { email: 'ann@example.com', password: 'hunter2', card: '4242 4242 4242 4242', note: 'n'.repeat(250) };
const viewer = {
  principal: { id: 'approver', key: 'k', roles: ['approver' as const], tools: [] as string[] },
  csrf: 'csrf',
};

/** What every surface must show open: each field, masked or folded where it must be, and nothing secret. */
function expectArgumentsShown(page: string): void {
  expect(page).not.toContain('<details');
  expect(page).toContain('<dd class="shown-exact" data-path="email">ann@example.com</dd>');
  expect(page).toContain('<dd class="shown-secret" data-path="password">•••• <span class="why">secret: not shown</span></dd>');
  expect(page).toContain('<dd class="shown-card" data-path="card">••••4242 <span class="why">card number: last four shown</span></dd>');
  expect(page).toContain(
    `<dd class="shown-folded" data-path="note">${'n'.repeat(200)}… <span class="why">folded: 250 bytes in all</span></dd>`,
  );
  expect(page).not.toContain('hunter2');
  expect(page).not.toContain('4242 4242');
  expect(page).not.toContain('n'.repeat(201));
  expect(page).toContain('sha256:args');
  expect(page).toContain('Open an account for ann@example.com');
}

describe('what an approver sees of the arguments', () => {
  it('the console card shows every field without a click, secret and card fields masked, a long one folded with its size', () => {
    const page = approvalsPage(
      viewer as never,
      [
        {
          approvalId: 'apr_1',
          operationId: 'op_1',
          runId: 'run_1',
          toolName: 'create_account',
          arguments: args,
          inputHash: 'sha256:args',
          requestedBy: 'agent',
          expiresAt: '2026-12-01T12:00:00.000Z',
          url: 'https://runner/v1/approvals/apr_1?sig=s',
        },
      ],
      (name) => (name === 'create_account' ? createAccount : undefined),
    );
    expectArgumentsShown(page);
  });

  it('the signed-link page shows the same', () => {
    const op = {
      schemaVersion: 1,
      operationId: 'op_1',
      runId: 'run_1',
      callId: 'call_1',
      turn: 1,
      toolName: 'create_account',
      principalId: 'agent',
      state: 'awaiting_approval',
      risk: 'irreversible_write',
      frozenArguments: JSON.stringify(args),
      inputHash: 'sha256:args',
      idempotencyKey: 'idk_x',
      attempts: 0,
      createdAt: '',
      updatedAt: '',
      version: 1,
      resumes: 0,
      approval: { approvalId: 'apr_1', state: 'pending', expiresAt: '2026-12-01T12:00:00.000Z' },
    } as OperationRecord;
    expectArgumentsShown(approvalPage(op, 'approver', 'sig', '/v1/approvals/apr_1', createAccount));
  });
});
