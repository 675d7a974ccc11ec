import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import tools from '../fixtures/approver-view-tools';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode, isEmbedded, Target } from '../support/target';

/**
 * What a person deciding reads of the arguments, on every surface that asks them: the console's card (in
 * Chromium, JavaScript off, no click), the signed-link page, the approver's webhook and `GET /v1/approvals`.
 * The tool marks `password` and `device.pin` secret; the card number shows its last four; a long note is
 * folded with its size. Screenshots go to test-results/screenshots/approver-view-<target>/.
 */

const SHOTS = screenshotDir(`approver-view-${Target}`);
const dana = { key: 'tr_dana_key_0123456789abcdefgh', secret: 'dana-receiver-secret-0123456789' };
const note = `Customer asked on the phone for a joint account; ${'details follow. '.repeat(20)}`;
const args = {
  email: 'ann@example.com',
  password: 'correct horse battery staple',
  card: '4242 4242 4242 4242',
  device: { name: 'Ann’s phone', pin: '2468' },
  note,
};

let stack: TestStack;
let browser: Browser;
let server: Server;
const deliveries: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push(Buffer.concat(chunks).toString('utf8'));
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stack = await startTestStack(
    handlerMode === 'template' ? { toolsEntry: join(import.meta.dirname, '../fixtures/approver-view-tools.ts') } : { tools },
  );
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describeWithChromium('what an approver sees of the arguments', () => {
  it.runIf(isEmbedded)(
    'every field without a click, secret and card fields masked, a long string folded with its size, on every surface',
    async () => {
      const { api, keys } = stack;
      stack.editConfig((config) => {
        config.principals.push({
          id: 'dana',
          key: dana.key,
          roles: ['approver'],
          tools: [],
          notify: { webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/dana`, secret: dana.secret },
        });
      });
      await api.until(
        'dana to be known',
        async () => (await api.request('GET', '/v1/approvals', { key: dana.key })).status,
        (status) => status === 200,
        // Where functions keep the config secret for up to 30 s (template mode), longer.
        60_000,
      );
      const runId = await api.createRun(keys.agent);
      const call = await api.call(keys.agent, runId, { callId: 'call_open', name: 'open_account', arguments: args });
      expect(call.body.state).toBe('awaiting_approval');
      const operationId = call.body.operationId as string;
      const { inputHash } = await api.operation(keys.agent, operationId);

      // The console card, JavaScript off: every field is on the card as it loads.
      const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1000, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${stack.apiUrl}/console/login`);
      await page.locator('input[name=key]').fill(keys.approver);
      await page.locator('button[type=submit]').click();
      await page.waitForLoadState();
      await page.goto(`${stack.apiUrl}/console/approvals`);
      const card = page.locator(`article[data-operation-id="${operationId}"]`);
      expect(await card.locator('details').count()).toBe(0);
      const field = (path: string) => card.locator(`dl.args dd[data-path="${path}"]`);
      for (const path of ['email', 'password', 'card', 'device.name', 'device.pin', 'note'])
        expect(await field(path).isVisible()).toBe(true);
      expect(await field('email').innerText()).toBe('ann@example.com');
      expect(await field('password').innerText()).toBe('•••• secret: not shown');
      expect(await field('device.pin').innerText()).toBe('•••• secret: not shown');
      expect(await field('card').innerText()).toBe('••••4242 card number: last four shown');
      expect(await field('device.name').innerText()).toBe('Ann’s phone');
      expect(await field('note').innerText()).toBe(
        `${Array.from(note).slice(0, 200).join('')}… folded: ${Buffer.byteLength(note).toLocaleString('en-US')} bytes in all`,
      );
      const text = await card.innerText();
      expect(text).toContain(inputHash);
      expect(text).toContain('Open an account for ann@example.com');
      expect(text).toContain('Register the device "Ann’s phone"');
      for (const secret of ['correct horse', '2468', '4242 4242']) expect(text).not.toContain(secret);
      expect(await page.content()).not.toContain('correct horse');
      await card.screenshot({ path: join(SHOTS, '01-console-card.png') });
      await screenshot(SHOTS, page, '02-console-approvals');

      // The signed-link page shows the same fields.
      const listed = (await api.client(keys.approver).listApprovals()).find((a) => a.operationId === operationId)!;
      // The frozen arguments are canonical JSON: their keys in order.
      expect(listed.argumentFields).toEqual([
        { path: 'card', text: '••••4242', shown: 'card' },
        { path: 'device.name', text: 'Ann’s phone', shown: 'exact' },
        { path: 'device.pin', text: '••••', shown: 'secret' },
        { path: 'email', text: 'ann@example.com', shown: 'exact' },
        { path: 'note', text: `${Array.from(note).slice(0, 200).join('')}…`, shown: 'folded', bytes: Buffer.byteLength(note) },
        { path: 'password', text: '••••', shown: 'secret' },
      ]);
      await page.goto(listed.url);
      expect(await page.locator('#arguments dd[data-path="password"]').innerText()).toBe('•••• secret: not shown');
      expect(await page.locator('#arguments dd[data-path="card"]').innerText()).toBe('••••4242 card number: last four shown');
      expect(await page.locator('body').innerText()).toContain(inputHash);
      expect(await page.content()).not.toContain('correct horse');
      await screenshot(SHOTS, page, '03-approval-page');
      await context.close();

      // Dana's webhook carries the same fields, the hash and the tool's lines, beside the fields it always had.
      const delivered = await api.until(
        'the webhook delivery',
        async () => deliveries.map((d) => JSON.parse(d)).find((p) => p.operationId === operationId),
        (p) => p !== undefined,
      );
      expect(delivered).toMatchObject({
        type: 'approval.requested',
        operationId,
        toolName: 'open_account',
        inputHash,
        approvalLines: ['Open an account for ann@example.com', 'Register the device "Ann’s phone"'],
        arguments: listed.argumentFields,
      });
      expect(typeof delivered.url).toBe('string');
      expect(JSON.stringify(delivered)).not.toMatch(/correct horse|2468|4242 4242/);
    },
    120_000,
  );
});
