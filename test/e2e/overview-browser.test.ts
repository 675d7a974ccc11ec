import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { UpstreamHttpError } from '../../functions/core/errors';
import type { ToolSpec } from '../../functions/core/tool-spec';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { startTestStack, type TestStack } from '../support/stack';
import { Target } from '../support/target';

/**
 * The console's overview in Chromium (JavaScript off), at an empty stack and after a known mixed load:
 * the figures it draws, read from its visually hidden tables, equal the load's. The embedded stack runs
 * tools of this file (two priced ones, one the upstream refuses, one whose outcome stays unknown, one that
 * needs an approver); with `TARGET=template` the page is checked to render through the template's routes.
 * Screenshots go to test-results/screenshots/overview-<target>/ for a person to read.
 */

const SHOTS = screenshotDir(`overview-${Target}`);
const Input = z.object({ n: z.number().int() });
const Output = z.object({ ok: z.boolean() });

function tool(name: string, rest: Partial<ToolSpec<z.infer<typeof Input>>>): ToolSpec<z.infer<typeof Input>, z.infer<typeof Output>> {
  return {
    name,
    description: `${name} (the overview test)`,
    inputSchema: Input,
    outputSchema: Output,
    risk: 'read',
    timeoutMs: 2_000,
    maxAttempts: 1,
    supportsIdempotency: true,
    approval: 'never',
    execute: async () => ({ ok: true }),
    ...rest,
  };
}

const TOOLS = [
  tool('lookup', {}),
  tool('priced_a', { risk: 'reversible_write', costCents: () => 7 }),
  tool('priced_b', { risk: 'reversible_write', costCents: () => 5 }),
  tool('refused', {
    execute: async () => {
      throw new UpstreamHttpError(400, 'bad_request', undefined, 'the upstream refused it');
    },
  }),
  // A write the upstream may have done (a 500 after sending) that no lookup can settle: a person must.
  tool('unsure', {
    risk: 'irreversible_write',
    supportsIdempotency: false,
    execute: async () => {
      throw new UpstreamHttpError(500, undefined, undefined, 'the upstream failed after the request');
    },
  }),
  tool('needs_person', { risk: 'irreversible_write', approval: 'always' }),
];

let stack: TestStack;
let browser: Browser;

async function signedIn(key: string): Promise<Page> {
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${stack.apiUrl}/console/login`);
  await page.locator('input[name=key]').fill(key);
  await page.locator('button[type=submit]').click();
  await page.waitForLoadState();
  return page;
}

/** A hidden table's rows as `{ row header: [cells] }`. */
async function table(page: Page, id: string): Promise<Record<string, string[]>> {
  const rows = await page
    .locator(`#${id} tbody tr`)
    .evaluateAll((trs) =>
      trs.map((tr) => [tr.querySelector('th')?.textContent ?? '', ...Array.from(tr.querySelectorAll('td'), (td) => td.textContent ?? '')]),
    );
  return Object.fromEntries(rows.map(([head, ...cells]) => [head, cells]));
}

/** The calls chart's table summed over its bars, by outcome. */
async function callsByOutcome(page: Page): Promise<Record<string, number>> {
  const head = await page.locator('#calls-by-outcome thead th').allTextContents();
  const sums: Record<string, number> = Object.fromEntries(head.slice(1).map((h) => [h, 0]));
  for (const cells of Object.values(await table(page, 'calls-by-outcome')))
    for (const [i, cell] of cells.entries()) sums[head[i + 1]] += Number(cell);
  return sums;
}

async function figures(page: Page): Promise<Record<string, string>> {
  return Object.fromEntries(Object.entries(await table(page, 'overview-figures')).map(([k, [v]]) => [k, v]));
}

async function waitFor<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describeWithChromium('the console overview in Chromium', () => {
  beforeAll(async () => {
    stack = await startTestStack(Target === 'embedded' ? { tools: TOOLS } : {});
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('is for reviewers and admins: an agent is refused, a reviewer finds it in the navigation', async () => {
    const agent = await signedIn(stack.keys.agent);
    expect(await agent.locator('header nav a', { hasText: 'Overview' }).count()).toBe(0);
    const refused = await agent.goto(`${stack.apiUrl}/console/overview`);
    expect(refused?.status()).toBe(403);
    expect(await agent.locator('main p').innerText()).toBe('The overview is for reviewers and admins.');
    const reviewer = await signedIn(stack.keys.reviewer);
    await reviewer.locator('header nav a', { hasText: 'Overview' }).click();
    await reviewer.waitForLoadState();
    expect(new URL(reviewer.url()).pathname).toBe('/console/overview');
  });

  it('draws an empty stack as zeros, with every chart and its table present', async () => {
    const page = await signedIn(stack.keys.reviewer);
    const res = await page.goto(`${stack.apiUrl}/console/overview`);
    expect(res?.status()).toBe(200);
    expect(await page.locator('svg').count()).toBe(4);
    expect(await page.locator('#calls-by-outcome tbody tr').count()).toBe(60);
    if (Target !== 'embedded') return;
    expect(await figures(page)).toEqual({
      Calls: '0',
      'p50 to the envelope': 'no calls',
      'p95 to the envelope': 'no calls',
      'Approvals waiting': '0',
      'Oldest approval waiting': 'none',
      'Unknown outcomes waiting': '0',
    });
    expect(Object.values(await callsByOutcome(page)).every((n) => n === 0)).toBe(true);
    expect(await table(page, 'spend-by-tool')).toEqual({});
    await screenshot(SHOTS, page, '01-overview-empty');
  });

  it('any other window shows the default with a notice; 15m has fifteen one-minute bars', async () => {
    const page = await signedIn(stack.keys.admin);
    await page.goto(`${stack.apiUrl}/console/overview?window=3y`);
    expect(await page.locator('.banner').innerText()).toBe('There is no window "3y"; showing the last 1h.');
    expect(await page.locator('#calls-by-outcome tbody tr').count()).toBe(60);
    await page.goto(`${stack.apiUrl}/console/overview?window=15m`);
    expect(await page.locator('#calls-by-outcome tbody tr').count()).toBe(15);
    expect(await page.locator('.windows a[aria-current=page]').innerText()).toBe('15m');
  });

  it.runIf(Target === 'template')(
    'counts a call made through the template’s functions (their roles write and read the rollups)',
    async () => {
      const { api, keys } = stack;
      const runId = await api.createRun(keys.agent);
      const read = await api.call(keys.agent, runId, { callId: 'c1', name: 'get_order', arguments: { orderId: 'ord_42' } });
      expect(read.body.status).toBe('succeeded');
      const page = await signedIn(stack.keys.reviewer);
      const sums = await waitFor(
        async () => {
          await page.goto(`${stack.apiUrl}/console/overview`);
          return callsByOutcome(page);
        },
        (s) => s.succeeded === 1,
        'calls by outcome',
      );
      expect(sums).toEqual({ succeeded: 1, failed: 0, rejected: 0, 'outcome unknown': 0, 'budget exhausted': 0, cancelled: 0 });
      expect((await figures(page)).Calls).toBe('1');
      await screenshot(SHOTS, page, '02-overview-one-call');
    },
  );

  it.runIf(Target === 'embedded')('draws a known mixed load as it happened', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 10_000 });
    const call = async (callId: string, name: string, args: unknown) =>
      (await api.call(keys.agent, runId, { callId, name, arguments: args })).body;
    const statuses = [
      (await call('c1', 'lookup', { n: 1 })).status,
      (await call('c2', 'lookup', { n: 2 })).status,
      (await call('c3', 'priced_a', { n: 3 })).status,
      (await call('c4', 'priced_a', { n: 4 })).status,
      (await call('c5', 'priced_b', { n: 5 })).status,
      (await call('c6', 'refused', { n: 6 })).status,
      (await call('c7', 'lookup', { n: 'not a number' })).status,
      (await call('c8', 'unsure', { n: 8 })).status,
    ];
    expect(statuses).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'failed', 'rejected', 'outcome_unknown']);
    const waiting = await call('c9', 'needs_person', { n: 9 });
    expect(waiting.state).toBe('awaiting_approval');

    const page = await signedIn(stack.keys.reviewer);
    const load = { succeeded: 5, failed: 1, rejected: 1, 'outcome unknown': 1, 'budget exhausted': 0, cancelled: 0 };
    await waitFor(
      async () => {
        await page.goto(`${stack.apiUrl}/console/overview`);
        return callsByOutcome(page);
      },
      (sums) => JSON.stringify(sums) === JSON.stringify(load),
      'calls by outcome',
    );
    const shown = await figures(page);
    expect(shown).toMatchObject({ Calls: '8', 'Approvals waiting': '1', 'Unknown outcomes waiting': '1' });
    expect(shown['p50 to the envelope']).toMatch(/^≤ \d+(\.\d+)? m?s$/);
    expect(shown['p95 to the envelope']).toMatch(/^≤ \d+(\.\d+)? m?s$/);
    expect(shown['Oldest approval waiting']).toMatch(/^\d+ s$/);
    expect(await table(page, 'spend-by-tool')).toEqual({ priced_a: ['14 ¢'], priced_b: ['5 ¢'] });
    // Every call but the one waiting for its approver needed no person.
    expect(await page.locator('main .card p.muted').innerText()).toBe(
      '8 calls needed no person; 0 waited for an approver and are not in these figures.',
    );
    // Each p95 drawn is at least its p50.
    for (const [p50, p95] of Object.values(await table(page, 'time-to-envelope')).filter(([a]) => a !== ''))
      expect(Number(p95)).toBeGreaterThanOrEqual(Number(p50));
    await screenshot(SHOTS, page, '02-overview-after-load');
  });
});
