import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approvalMessage } from '../../functions/slack/message';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { operation } from '../support/records';
import { renderSlackMessage } from '../support/slack-render';

/** The Slack message as an approver reads it, drawn from the Block Kit JSON the runner sends, pending and decided. */

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(() => browser?.close());

const op = operation({
  state: 'awaiting_approval',
  principalId: 'agent',
  runId: 'run_7Hq2kX',
  operationId: 'op_7Hq2kX_call_42',
  risk: 'irreversible_write',
  inputHash: 'sha256:9f2c4e1b0a7d3c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a',
  frozenArguments: JSON.stringify({
    amount: 75_000,
    currency: 'USD',
    customer: 'cus_Q4x9',
    description: 'Annual plan, card 4242 4242 4242 4242',
    metadata: [{ key: 'order', value: 'ord_1187' }],
    notes: 'n'.repeat(420),
  }),
  approvalLines: [
    'Charge $750.00 (75000 in minor units of USD) to customer cus_Q4x9.',
    'Charges of 50000 minor units or more need a person to approve.',
  ],
  policies: { call: ['agents-may-charge'], unattended: ['large-charges-need-a-person'] },
  approval: { approvalId: 'apr_op_7Hq2kX_call_42', state: 'pending', expiresAt: '2026-12-08T13:00:00.000Z' },
});

describeWithChromium('the Slack message, drawn', () => {
  it('shows the tool, its lines, the arguments without a click and the buttons; then who decided and how it ended', async () => {
    const page = await browser.newPage({ viewport: { width: 820, height: 600 } });
    const dir = screenshotDir('slack-message');
    await page.setContent(renderSlackMessage(approvalMessage(op, [])));
    expect(await page.locator('.unknown').count()).toBe(0);
    expect(await page.locator('button').allTextContents()).toEqual(['Approve', 'Deny']);
    const body = await page.locator('.body').innerText();
    for (const part of [
      'Approve charge_card?',
      'amount: 75000',
      'description: Annual plan, card ••••4242',
      '(420 bytes)',
      'agents-may-charge',
    ])
      expect(body).toContain(part);
    await screenshot(dir, page, 'pending');

    const settled = approvalMessage(
      {
        ...op,
        state: 'reported',
        outcome: { kind: 'succeeded' },
        envelope: { status: 'succeeded' } as never,
        approval: { ...op.approval!, state: 'approved', decidedBy: 'alice', decidedAt: '2026-12-07T13:41:07.000Z' },
      },
      [],
    );
    await page.setContent(renderSlackMessage(settled));
    expect(await page.locator('button').count()).toBe(0);
    expect(await page.locator('.body').innerText()).toContain('Approved by alice at 2026-12-07T13:41:07.000Z. The call ran and succeeded.');
    await screenshot(dir, page, 'settled');
    await page.close();
  });
});
