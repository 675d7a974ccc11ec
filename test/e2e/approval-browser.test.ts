import type { Browser } from 'playwright-core';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  stack = await startTestStack();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describeWithChromium('the approval page in a real browser', () => {
  it('shows the exact operation, escapes what the model wrote, works without JavaScript, and approving charges once', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 1_000_000 });
    const hostile = '<script>document.title="owned"</script><img src=x onerror="document.title=\'owned\'">';
    // A right-to-left override makes the rest of a line read backwards; the page must show it, not obey it.
    const args = { amount: 123_456, currency: 'EUR', customer: 'cus_browser', description: `${hostile} refund \u202Egpj.exe` };
    const submitted = await api.call(keys.agent, runId, { callId: 'call_browser', name: 'charge_card', arguments: args });
    expect(submitted.body.state).toBe('awaiting_approval');
    const { body } = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = body.approvals.find((a: { operationId: string }) => a.operationId === submitted.body.operationId);

    // JavaScript off: the page must work as plain HTML.
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const response = await page.goto(approval.url);
    expect(response?.status()).toBe(200);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(await page.title()).toBe('Approve charge_card?');
    const text = await page.locator('body').innerText();
    for (const fact of [
      'charge_card',
      'irreversible_write',
      'agent',
      '123456',
      'EUR',
      'cus_browser',
      approval.expiresAt,
      approval.inputHash,
    ])
      expect(text).toContain(fact);
    // Each field as it is, open on the page (a string as its text, not as JSON).
    expect(await page.locator('#arguments dd[data-path="description"]').innerText()).toContain(hostile);
    // What a person reads: the amount with its currency, why they are asked, the override made visible.
    expect(await page.locator('#summary').innerText()).toContain(
      'Charge €1,234.56 (123456 in minor units of EUR) to customer cus_browser.',
    );
    expect(await page.locator('#reason').innerText()).toMatch(
      /A rule in the policy of this tool asks a person to approve a call with these arguments\. Risk: irreversible_write \(has an effect that cannot be undone\)/,
    );
    expect(await page.locator('#arguments').innerText()).toContain('refund <U+202E>gpj.exe');
    expect(text).not.toContain('\u202E');
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(0);
    // Opening the link decided nothing.
    expect((await api.operation(keys.agent, submitted.body.operationId)).approval.state).toBe('pending');
    await screenshot(screenshotDir('approval-page'), page, 'approval-page');

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForLoadState();
    expect(await page.locator('h1').innerText()).toBe('Approved');
    await context.close();

    const op = await api.until(
      'reported',
      () => api.operation(keys.reviewer, submitted.body.operationId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'succeeded', result: { amount: 123_456 } });
    expect(op.approval).toMatchObject({ state: 'approved', decidedBy: 'approver' });
    const ledger = await sandbox.ledger();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ kind: 'charge', idempotencyKey: op.idempotencyKey, body: args });

    // The same link cannot decide again.
    const again = await browser.newPage();
    await again.goto(approval.url);
    expect(await again.locator('body').innerText()).toContain('This approval is approved');
    expect(await again.locator('#decision').innerText()).toBe(`Decided (approved) by approver at ${op.approval.decidedAt}.`);
    expect(await again.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await again.close();
  });
});
