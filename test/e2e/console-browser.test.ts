import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce, Target } from '../support/target';

/**
 * The console as a person uses it, in Chromium with JavaScript off: sign in with a key, approve one charge
 * and reject another, resolve a review, find the run and read its timeline, sign out. A form posted from
 * another origin is refused. With `TARGET=template` every request goes through the HTTP API's routes as the
 * synthesized template declares them (`/console`, `/console/{proxy+}`) to the API function in its worker.
 * Screenshots go to test-results/screenshots/console-<target>/ (support/browser.ts).
 */

const SHOTS = screenshotDir(`console-${Target}`);

let stack: TestStack;
let browser: Browser;
let runId: string;
const ops: Record<'approve' | 'reject' | 'review', string> = { approve: '', reject: '', review: '' };
/** With TARGET=template: the route keys of the HTTP API in the template the stack was built from. */
let templateRoutes: unknown[] = [];

async function setUp(): Promise<void> {
  stack = await startTestStack({
    editTemplate: (template) => {
      templateRoutes = Object.values(template.Resources)
        .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
        .map((r) => r.Properties?.RouteKey);
    },
  });
  browser = await launchChromium();
  const { api, keys, sandbox } = stack;
  runId = await api.createRun(keys.agent, { maxSpendCents: 10_000_000 });
  // Two charges that wait for a person; one carries a right-to-left override the pages must show, not obey.
  const big = await api.call(keys.agent, runId, {
    callId: 'call_big',
    name: 'charge_card',
    arguments: { amount: 60_000, currency: 'USD', customer: 'cus_console', description: 'annual plan \u202Egpj.exe' },
  });
  const eur = await api.call(keys.agent, runId, {
    callId: 'call_eur',
    name: 'charge_card',
    arguments: { amount: 123_456, currency: 'EUR', customer: 'cus_console' },
  });
  expect([big.body.state, eur.body.state]).toEqual(['awaiting_approval', 'awaiting_approval']);
  ops.approve = big.body.operationId;
  ops.reject = eur.body.operationId;
  // An email whose outcome is unknown (committed, then the answer never came): only a person can settle it.
  await sandbox.fault({ route: 'POST /v1/emails', mode: 'commit_then_timeout', delayMs: 20_000 });
  const mail = await api.call(keys.agent, runId, {
    callId: 'call_mail',
    name: 'send_email',
    arguments: { to: 'ops@example.com', subject: 'Renewal', body: 'Your plan renews today.' },
  });
  expect(mail.body.status).toBe('outcome_unknown');
  ops.review = mail.body.logical_operation_id;
}

async function signedIn(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const login = await page.goto(`${stack.apiUrl}/console/login`);
  expect(login?.status()).toBe(200);
  await page.locator('input[name=key]').fill(key);
  await page.locator('button[type=submit]').click();
  await page.waitForLoadState();
  return { context, page };
}

const shot = (page: Page, name: string) => screenshot(SHOTS, page, name);

describeWithChromium('the console in Chromium, without JavaScript', () => {
  beforeAll(setUp);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it.runIf(Target === 'template')('is served by the API function under the routes the synthesized template declares', async () => {
    expect(templateRoutes).toEqual(expect.arrayContaining(['ANY /console', 'ANY /console/{proxy+}']));
    // A path the template does not route answers as API Gateway does: every console page below came through those routes.
    const outside = await fetch(`${stack.apiUrl}/consoles`);
    expect(outside.status).toBe(404);
    expect(await outside.json()).toEqual({ message: 'Not Found' });
    const root = await fetch(`${stack.apiUrl}/console`, { redirect: 'manual' });
    expect(root.status).toBe(303);
    expect(root.headers.get('location')).toBe('/console/login');
  });

  it('signs in with a key: a login form, then an HttpOnly SameSite=Strict session cookie that holds no key', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const res = await page.goto(`${stack.apiUrl}/console/approvals`);
    // Not signed in: the console sends a person to the sign-in form, with the approval page's headers.
    expect(page.url()).toBe(`${stack.apiUrl}/console/login`);
    const headers = res!.headers();
    expect(headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['cache-control']).toBe('no-store');
    await shot(page, '01-login');

    await page.locator('input[name=key]').fill('tr_not_a_key_of_anyone_here');
    await page.locator('button[type=submit]').click();
    await page.waitForLoadState();
    expect(await page.locator('.banner.error').innerText()).toBe('That key or token is not valid.');
    expect(await context.cookies()).toEqual([]);

    await page.locator('input[name=key]').fill(stack.keys.approver);
    await page.locator('button[type=submit]').click();
    await page.waitForLoadState();
    expect(page.url()).toBe(`${stack.apiUrl}/console/approvals`);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'toolrunner-console', httpOnly: true, sameSite: 'Strict', path: '/' });
    // Plain HTTP on loopback: no Secure flag (a browser would drop it); everywhere else it is Secure and __Host-.
    expect(cookie.secure).toBe(false);
    expect(cookie.value).not.toContain(stack.keys.approver);
    expect(Buffer.from(cookie.value.split('.')[0], 'base64url').toString()).not.toContain(stack.keys.approver);
    expect(await page.locator('script').count()).toBe(0);
    await context.close();
  });

  it('shows pending approvals with amounts as the approval page shows them, and approves and rejects from forms', async () => {
    const { context, page } = await signedIn(stack.keys.approver);
    const big = page.locator(`article[data-operation-id="${ops.approve}"]`);
    const eur = page.locator(`article[data-operation-id="${ops.reject}"]`);
    expect(await big.locator('ul.summary').innerText()).toContain('Charge $600.00 (60000 in minor units of USD) to customer cus_console.');
    expect(await eur.locator('ul.summary').innerText()).toContain(
      'Charge €1,234.56 (123456 in minor units of EUR) to customer cus_console.',
    );
    expect(await big.innerText()).toContain('irreversible_write');
    // The run is someone else's (an approver never decides on its own), so a plain approver sees its id, not a link it may not open.
    expect(await big.locator('a[href^="/console/runs/"]').count()).toBe(0);
    expect(await big.locator('dd code').first().innerText()).toBe(runId);
    // The override is shown as a code point, never obeyed; the arguments are open on the card, no click needed.
    expect(await big.locator('dl.args dd[data-path="description"]').innerText()).toBe('annual plan <U+202E>gpj.exe');
    expect(await page.locator('body').innerText()).not.toContain('\u202E');
    await shot(page, '02-approvals');

    await big.locator('input[name=reason]').fill('renewal agreed by phone');
    await big.locator('button[name=decision][value=approve]').click();
    await page.waitForLoadState();
    expect(await page.locator('.banner.done').innerText()).toBe(`Approved ${ops.approve}.`);
    expect(await page.locator(`article[data-operation-id="${ops.approve}"]`).count()).toBe(0);
    await shot(page, '03-approved');

    await page.locator(`article[data-operation-id="${ops.reject}"] button[name=decision][value=reject]`).click();
    await page.waitForLoadState();
    expect(await page.locator('.banner.done').innerText()).toBe(`Rejected ${ops.reject}.`);
    expect(await page.locator('#empty').innerText()).toBe('Nothing waits for your approval.');
    await context.close();

    const { api, keys } = stack;
    const approved = await api.until(
      'the approved charge reported',
      () => api.operation(keys.agent, ops.approve),
      (op) => op.state === 'reported',
    );
    expect(approved.approval).toMatchObject({ state: 'approved', decidedBy: 'approver' });
    expect(approved.envelope).toMatchObject({ status: 'succeeded', result: { amount: 60_000 } });
    const rejected = await api.until(
      'the rejected charge reported',
      () => api.operation(keys.agent, ops.reject),
      (op) => op.state === 'reported',
    );
    expect(rejected.envelope).toMatchObject({ status: 'rejected', code: 'approval_rejected' });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_console');
    expect(charges.map((c) => c.body.amount)).toEqual([60_000]);
  });

  it('resolves an open review with a note', async () => {
    const { api, keys } = stack;
    await api.until(
      'the review listed',
      async () => (await api.client(keys.reviewer).listReviews()).map((r) => r.operationId),
      (ids) => ids.includes(ops.review),
    );
    const { context, page } = await signedIn(keys.reviewer);
    expect(page.url()).toBe(`${stack.apiUrl}/console/reviews`);
    const card = page.locator(`article[data-operation-id="${ops.review}"]`);
    expect(await card.innerText()).toContain('send_email');
    await card.locator('textarea[name=note]').fill('Found it in the mail provider log: delivered at 10:02.');
    await shot(page, '04-reviews');
    await card.locator('button[name=outcome][value=succeeded]').click();
    await page.waitForLoadState();
    expect(await page.locator('.banner.done').innerText()).toBe(`Recorded ${ops.review} as succeeded.`);
    expect(await page.locator(`article[data-operation-id="${ops.review}"]`).count()).toBe(0);
    await context.close();
    const op = await api.operation(keys.reviewer, ops.review);
    expect(op.review).toMatchObject({ resolvedBy: 'reviewer', note: 'Found it in the mail provider log: delivered at 10:02.' });
  });

  it('lists runs a page at a time and opens a run’s timeline, with the amount and the override shown as on the approval page', async () => {
    const { api, keys } = stack;
    // More runs than one console page holds (25), so the list pages.
    for (let i = 0; i < 26; i++) await api.createRun(keys.agent);
    const { context, page } = await signedIn(keys.admin);
    expect(page.url()).toBe(`${stack.apiUrl}/console/approvals`);
    await page.goto(`${stack.apiUrl}/console/runs`);
    const firstPage = await page.locator('#runs tbody tr').count();
    expect(firstPage).toBe(25);
    await shot(page, '05-runs');
    await page.locator('a[rel=next]').click();
    await page.waitForLoadState();
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    expect(await row.innerText()).toMatch(/open\s+agent/);
    // Spend counts every admitted call's cost (both charges were admitted, 60000 + 123456 cents), in dollars.
    expect((await api.client(keys.agent).getRun(runId)).usage.spendCents).toBe(183_456);
    expect(await row.locator('td').nth(6).innerText()).toBe('$1,834.56');
    await row.locator('a').click();
    await page.waitForLoadState();
    expect(page.url()).toBe(`${stack.apiUrl}/console/runs/${runId}`);
    const timeline = await page.locator('#timeline').innerText();
    expect(timeline).toContain('cost $600.00');
    expect(timeline).not.toContain('¢');
    expect(timeline).toMatch(/approval approve by approver/);
    expect(timeline).toMatch(/approval reject by approver/);
    expect(timeline).toContain('renewal agreed by phone');
    expect(timeline).toMatch(/reconcile finished resolved_by_reviewer .*by reviewer/);
    // An admin sees the frozen arguments, with the override made visible.
    expect(timeline).toContain('annual plan <U+202E>gpj.exe');
    expect(await page.locator('body').innerText()).not.toContain('\u202E');
    await shot(page, '06-timeline');
    await context.close();
  });

  it('shows an agent its own runs only, filters them by status, and refuses another principal’s timeline', async () => {
    const { api, keys } = stack;
    const kept = await api.createRun(keys.other);
    const cancelled = await api.createRun(keys.other);
    expect((await api.client(keys.other).cancelRun(cancelled)).status).toBe('cancelled');
    const { context, page } = await signedIn(keys.other);
    expect(page.url()).toBe(`${stack.apiUrl}/console/runs`);
    const shown = async () => Promise.all((await page.locator('#runs tbody tr').all()).map((tr) => tr.getAttribute('data-run-id')));
    expect(await shown()).toEqual([cancelled, kept]);
    await page.locator('select[name=status]').selectOption('cancelled');
    await page.locator('form[action="/console/runs"] button[type=submit]').click();
    await page.waitForLoadState();
    expect(page.url()).toBe(`${stack.apiUrl}/console/runs?status=cancelled`);
    expect(await shown()).toEqual([cancelled]);
    await shot(page, '06b-agent-runs-cancelled');
    const other = await page.goto(`${stack.apiUrl}/console/runs/${runId}`);
    expect(other?.status()).toBe(403);
    expect(await page.locator('main').innerText()).toContain('This run belongs to another principal.');
    expect(await page.locator('main').innerText()).not.toContain('cus_console');
    await context.close();
  });

  it('signs out: the cookie is gone and the console asks for a key again', async () => {
    const { context, page } = await signedIn(stack.keys.approver);
    await page.locator('header button[name=logout]').click();
    await page.waitForLoadState();
    expect(page.url()).toBe(`${stack.apiUrl}/console/login`);
    expect(await context.cookies()).toEqual([]);
    await page.goto(`${stack.apiUrl}/console/approvals`);
    expect(page.url()).toBe(`${stack.apiUrl}/console/login`);
    await shot(page, '07-signed-out');
    await context.close();
  });

  it('refuses a form posted from another site, even with the session cookie attached', async () => {
    const { api, keys } = stack;
    const pending = await api.call(keys.agent, runId, {
      callId: 'call_forged',
      name: 'charge_card',
      arguments: { amount: 99_000, currency: 'USD', customer: 'cus_forged' },
    });
    expect(pending.body.state).toBe('awaiting_approval');
    // Another origin (another port on 127.0.0.1 is the same site, so SameSite alone would let the cookie go).
    const evil = await serveHtml(
      `<form method="post" action="${stack.apiUrl}/console/approvals/${pending.body.operationId}"><input type="hidden" name="decision" value="approve"><button id="go">Claim your prize</button></form>`,
    );
    try {
      const { context, page } = await signedIn(keys.approver);
      expect(await context.cookies()).toHaveLength(1);
      await page.goto(evil.url);
      await page.locator('#go').click();
      await page.waitForLoadState();
      expect(await page.locator('h1').innerText()).toBe('Refused');
      expect(await page.locator('main').innerText()).toContain('not sent from the console');
      await shot(page, '08-forged-post-refused');
      await context.close();
    } finally {
      await evil.close();
    }
    expect((await api.operation(keys.agent, pending.body.operationId)).approval.state).toBe('pending');

    // The Origin check and the token each hold alone: the right cookie and token from a foreign Origin, and
    // the right cookie and Origin without the token, are both refused.
    const session = await signInOverHttp(keys.approver);
    const form = await fetch(`${stack.apiUrl}/console/approvals`, { headers: { cookie: session.cookie } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())![1];
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${stack.apiUrl}/console/approvals/${pending.body.operationId}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    expect((await post({ origin: 'https://evil.example' }, `csrf=${encodeURIComponent(csrf)}&decision=approve`)).status).toBe(403);
    expect((await post({ origin: stack.apiUrl }, 'decision=approve')).status).toBe(403);
    expect((await post({}, `csrf=${encodeURIComponent(csrf)}&decision=approve`)).status).toBe(403);
    expect((await api.operation(keys.agent, pending.body.operationId)).approval.state).toBe('pending');
    // With both, the same request decides.
    const ok = await post({ origin: stack.apiUrl }, `csrf=${encodeURIComponent(csrf)}&decision=reject`);
    expect(ok.status).toBe(303);
    expect((await api.operation(keys.agent, pending.body.operationId)).approval.state).toBe('rejected');
  });

  it.runIf(configEditsApplyAtOnce)('ends a session when its principal’s key changes', async () => {
    const session = await signInOverHttp(stack.keys.reviewer);
    const before = await fetch(`${stack.apiUrl}/console/reviews`, { headers: { cookie: session.cookie }, redirect: 'manual' });
    expect(before.status).toBe(200);
    const rotated = `tr_rotated_${Date.now()}_reviewer_key`;
    stack.editConfig((config) => {
      config.principals.find((p) => p.id === 'reviewer')!.key = rotated;
    });
    await stack.api.until(
      'the old session refused',
      async () => (await fetch(`${stack.apiUrl}/console/reviews`, { headers: { cookie: session.cookie }, redirect: 'manual' })).status,
      (status) => status === 303,
    );
    stack.keys.reviewer = rotated;
  });
});

/** Signs in with a key as a form would, and returns the session cookie as a browser would send it back. */
async function signInOverHttp(key: string): Promise<{ cookie: string }> {
  const res = await fetch(`${stack.apiUrl}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: stack.apiUrl, 'content-type': 'application/x-www-form-urlencoded' },
    body: `key=${encodeURIComponent(key)}`,
  });
  expect(res.status).toBe(303);
  const [setCookie] = res.headers.getSetCookie();
  return { cookie: setCookie.split(';')[0] };
}

/** One HTML page on its own origin (another port), as a hostile site would serve it. */
async function serveHtml(html: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><body>${html}</body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
