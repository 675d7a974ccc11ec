import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { describeWithChromium, launchChromium, screenshotDir } from '../support/browser';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MetricName } from '../../functions/core/metric-names';
import { formatTimeline } from '../../functions/core/timeline';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';
import { PAGE_SECURITY_HEADERS } from '../../functions/html/page-basics';

/** Where the screenshot and the printed timeline go, for a person to look at. */
const OUT_DIR = screenshotDir('trace-page');
let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  stack = await startTestStack({ seed: 11 });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const CARD = '4242 4242 4242 4242';
const charge = { amount: 2500, currency: 'USD', customer: 'cus_ops', description: `paid with ${CARD}` };

describeWithChromium('the trace page in a real browser: commit then timeout', () => {
  it('shows the story of the run, one line per event, with masked data, replays and conflicts', async () => {
    const { api, keys, sandbox } = stack;
    await sandbox.reset();
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 20_000 });
    const res = await api.call(keys.agent, runId, { callId: 'call_ctt', name: 'charge_card', arguments: charge });
    expect(res.body).toMatchObject({ status: 'succeeded', result: { amount: 2500 } });
    const opId = res.body.logical_operation_id;
    // The agent retries the same call (a replay), then reuses the callId with other arguments (a conflict).
    expect(
      (await api.call(keys.agent, runId, { callId: 'call_ctt', name: 'charge_card', arguments: charge })).headers.get(
        'idempotent-replayed',
      ),
    ).toBe('true');
    expect(
      (await api.call(keys.agent, runId, { callId: 'call_ctt', name: 'charge_card', arguments: { ...charge, amount: 2600 } })).status,
    ).toBe(409);
    await api.until(
      'reported',
      () => api.operation(keys.agent, opId),
      (o) => o.state === 'reported',
    );
    const events = await api.trace(keys.agent, runId);
    const text = formatTimeline(events);
    writeFileSync(join(OUT_DIR, 'commit-then-timeout.timeline.txt'), text);
    console.log(`timeline of "commit then timeout" (${OUT_DIR}):\n${text}`);

    // The page: authenticated by the bearer key, JavaScript off, the approval page's headers.
    const context = await browser.newContext({ javaScriptEnabled: false, extraHTTPHeaders: { authorization: `Bearer ${keys.agent}` } });
    const page = await context.newPage();
    const response = await page.goto(`${stack.apiUrl}/v1/runs/${runId}/timeline`);
    expect(response?.status()).toBe(200);
    const headers = response!.headers();
    expect(headers).toMatchObject({
      'content-security-policy': PAGE_SECURITY_HEADERS['Content-Security-Policy'],
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
    });
    expect(headers['content-type']).toMatch(/^text\/html/);
    await page.screenshot({ path: join(OUT_DIR, 'trace-page.png'), fullPage: true });

    expect(await page.title()).toBe(`Trace of ${runId}`);
    const section = page.locator(`section#${opId}`);
    expect(await section.locator('h2').innerText()).toMatch(new RegExp(`^${opId} charge_card\\s+call call_ctt turn 1$`));
    const lines = await section.locator('li .text').allInnerTexts();
    expect(lines).toHaveLength(events.length);
    const key = [
      'attempt started',
      'attempt finished outcome_unknown timeout_unknown',
      'executing → outcome_unknown',
      'reconcile started (lookup)',
      'reconcile finished found',
      'outcome_unknown → recorded',
      'result recorded succeeded',
      'result reported succeeded',
      'duplicate submission replayed from agent',
      'CONFLICT: callId reused with different arguments → 409 call_id_conflict',
    ];
    for (const fact of key)
      expect(
        lines.some((l) => l.startsWith(fact)),
        fact,
      ).toBe(true);
    // Each key event is visible (laid out, on the page), not only present in the markup.
    for (const type of ['attempt.finished', 'reconcile.finished', 'operation.replayed', 'call.conflict'])
      await expect(section.locator(`li[data-type="${type}"]`).first().isVisible()).resolves.toBe(true);
    expect(await section.locator('li.notable').count()).toBeGreaterThanOrEqual(3);
    expect(await section.locator('li[data-type="attempt.finished"] .n').innerText()).toBe('#1');

    // The data the owner may see, with the card number masked; never the idempotency key.
    const op = await api.operation(keys.reviewer, opId);
    const body = await page.locator('body').innerText();
    expect(body).toContain('"customer": "cus_ops"');
    expect(body).toContain('••••4242');
    expect(body).not.toContain(CARD);
    expect(body).not.toContain(op.idempotencyKey);
    expect(body).toContain(`"id": "${res.body.result.id}"`);
    expect(await page.locator('script').count()).toBe(0);
    await context.close();

    // A reviewer sees the story but not the data; someone else's agent and a missing key see nothing.
    const reviewer = await api.request('GET', `/v1/runs/${runId}/timeline`, { key: keys.reviewer });
    expect(reviewer.status).toBe(200);
    expect(reviewer.body).toContain('reconcile finished found');
    expect(reviewer.body).not.toContain('cus_ops');
    expect((await api.request('GET', `/v1/runs/${runId}/timeline`, { key: keys.other })).status).toBe(403);
    expect((await api.request('GET', `/v1/runs/${runId}/timeline`)).status).toBe(401);
    // The JSON route keeps its contract.
    const json = await api.request('GET', `/v1/runs/${runId}/trace`, { key: keys.agent });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(json.body)).toEqual(['events']);
  });

  it.runIf(isEmbedded)('counts what happened, readable by admins only', async () => {
    const { api, keys } = stack;
    expect((await api.request('GET', '/v1/metrics', { key: keys.agent })).status).toBe(403);
    const res = await api.request('GET', '/v1/metrics', { key: keys.admin });
    expect(res.status).toBe(200);
    const value = (name: string, dims: Record<string, string>) =>
      res.body.metrics.find(
        (m: { name: string; dimensions: Record<string, string> }) =>
          m.name === name && JSON.stringify(m.dimensions) === JSON.stringify(dims),
      )?.value;
    expect(value(MetricName.unknownOutcomes, { tool: 'charge_card' })).toBe(1);
    expect(value(MetricName.toolCalls, { outcome: 'succeeded', tool: 'charge_card' })).toBe(1);
    expect(value(MetricName.attempts, { tool: 'charge_card' })).toBe(1);
    expect(value(MetricName.replays, { tool: 'charge_card' })).toBe(1);
    expect(value(MetricName.conflicts, { tool: 'charge_card' })).toBe(1);
  });
});
