import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { SNSClient } from '@aws-sdk/client-sns';
import ts from 'typescript';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryMetrics } from '../../functions/adapters/metrics';
import { makeNotifier, snsChannel, WEBHOOK_DELIVERY, webhookChannel, type WebhookDeliveryPolicy } from '../../functions/adapters/notifier';
import { RunnerConfigSchema, type RunnerConfig } from '../../functions/core/config';
import { MetricName } from '../../functions/core/metric-names';
import type { ApprovalRequest } from '../../functions/core/ports';
import { signWebhookBody, verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER } from '../../functions/core/webhook-signature';
import { FUNCTIONS } from '../../infra/functions';
import { WATCHED_METRICS } from '../../infra/monitoring';

/** What a receiver saw: the raw body, the signature header and when, in arrival order. */
interface Received {
  path: string;
  body: string;
  signature: string | undefined;
  at: number;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** A real HTTP receiver on loopback; `answer` decides each response (or never answers, to time out). */
async function receiver(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _q, res) => res.end('ok')) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        signature: req.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()] as string | undefined,
        at: Date.now(),
      });
      answer(received.length, req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

const SECRETS = { alice: 'alice-webhook-secret-0123456789', bob: 'bob-webhook-secret-9876543210' };

function configWith(urls: { alice?: string; bob?: string }): () => Promise<RunnerConfig & { approvalSecret: string }> {
  const config = RunnerConfigSchema.parse({
    approvalSecret: 'the-config-secret-that-signs-links',
    principals: [
      { id: 'agent', key: 'agent-key-0123456789', roles: ['agent'], tools: '*' },
      ...(['alice', 'bob'] as const).map((id) => ({
        id,
        key: `${id}-key-0123456789abcdef`,
        roles: ['approver'],
        tools: [],
        ...(urls[id] ? { notify: { webhookUrl: urls[id], secret: SECRETS[id] } } : {}),
      })),
      // An approver without a webhook: reached by the other channels only.
      { id: 'carol', key: 'carol-key-0123456789abcdef', roles: ['approver'], tools: [] },
    ],
  });
  return async () => ({ ...config, approvalSecret: config.approvalSecret! });
}

const request: ApprovalRequest = {
  approvalId: 'apr_1',
  operationId: 'op_1',
  runId: 'run_1',
  toolName: 'charge_card',
  requestedBy: 'agent',
  summary: "agent asks to run charge_card (irreversible write) in run run_1; it counts $600.00 against the run's spend budget.",
  expiresAt: '2026-12-02T10:00:00.000Z',
  links: [
    { approverId: 'alice', url: 'https://runner.example/v1/approvals/apr_1?sig=ALICE-SIG' },
    { approverId: 'bob', url: 'https://runner.example/v1/approvals/apr_1?sig=BOB-SIG' },
    { approverId: 'carol', url: 'https://runner.example/v1/approvals/apr_1?sig=CAROL-SIG' },
  ],
};

/** Short waits so the tests take seconds, not the production 20 s. */
const quick: Partial<WebhookDeliveryPolicy> = { baseMs: 100, capMs: 400, attemptTimeoutMs: 1_000, minAttemptMs: 200, deadlineMs: 8_000 };

describe('the webhook signature', () => {
  const body = JSON.stringify({ type: 'approval.requested', approvalId: 'apr_1' });
  const now = Date.parse('2026-12-01T10:00:00Z');

  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> and verifies with the same secret only', () => {
    const header = signWebhookBody(SECRETS.alice, body, now);
    expect(header).toMatch(/^t=1796119200,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header, nowMs: now })).toEqual({ ok: true, timestamp: 1796119200 });
    expect(verifyWebhookSignature({ secret: SECRETS.bob, body, header, nowMs: now })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body: `${body} `, header, nowMs: now })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('refuses stale, missing and malformed headers, and accepts any matching v1 (a secret being rotated)', () => {
    const header = signWebhookBody(SECRETS.alice, body, now);
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header, nowMs: now + 301_000 })).toEqual({ ok: false, reason: 'stale' });
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header, nowMs: now + 299_000 }).ok).toBe(true);
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header: undefined })).toEqual({ ok: false, reason: 'missing' });
    for (const bad of ['v1=abc', 't=1796119200', 'garbage', `t=x,v1=${'0'.repeat(64)}`])
      expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header: bad, nowMs: now })).toEqual({ ok: false, reason: 'malformed' });
    const other = signWebhookBody(SECRETS.bob, body, now).split(',')[1];
    expect(verifyWebhookSignature({ secret: SECRETS.alice, body, header: `${other},${header}`, nowMs: now }).ok).toBe(true);
  });
});

describe("docs/operate.md's verification snippet for receivers", () => {
  it('accepts what the runner signs, and nothing else', () => {
    const doc = readFileSync('docs/operate.md', 'utf8');
    const source = /```ts\n(import \{ createHmac[\s\S]*?)```/.exec(doc)?.[1];
    expect(source, 'docs/operate.md has the snippet').toBeDefined();
    const js = ts.transpileModule(source!, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
    const module = { exports: {} as Record<string, (body: string, header: string, secret: string) => boolean> };
    new Function('require', 'module', 'exports', js.outputText)(createRequire(import.meta.url), module, module.exports);
    const verify = module.exports.verifyToolrunnerSignature;
    const body = JSON.stringify({ type: 'approval.requested', url: 'https://runner.example/v1/approvals/apr_1?sig=x' });
    const header = signWebhookBody(SECRETS.alice, body, Date.now());
    expect(verify(body, header, SECRETS.alice)).toBe(true);
    expect(verify(body, header, SECRETS.bob)).toBe(false);
    expect(verify(`${body} `, header, SECRETS.alice)).toBe(false);
    expect(verify(body, signWebhookBody(SECRETS.alice, body, Date.now() - 600_000), SECRETS.alice)).toBe(false);
    expect(verify(body, 'garbage', SECRETS.alice)).toBe(false);
    expect(verify(body, signWebhookBody('', body, Date.now()), '')).toBe(false);
  });
});

describe('webhook delivery to a real HTTP receiver', () => {
  it('sends each approver its own link only, signed with its own notify.secret', async () => {
    const hook = await receiver();
    const metrics = memoryMetrics();
    const notifier = makeNotifier(
      [webhookChannel({ config: configWith({ alice: `${hook.url}/alice`, bob: `${hook.url}/bob?team=ops` }) })],
      {
        metrics,
      },
    );
    await notifier.approvalRequested(request);

    expect(hook.received.map((r) => r.path).sort()).toEqual(['/alice', '/bob?team=ops']);
    for (const [id, path, own] of [
      ['alice', '/alice', 'ALICE-SIG'],
      ['bob', '/bob?team=ops', 'BOB-SIG'],
    ] as const) {
      const got = hook.received.find((r) => r.path === path)!;
      const other = id === 'alice' ? 'bob' : 'alice';
      expect(verifyWebhookSignature({ secret: SECRETS[id], body: got.body, header: got.signature }).ok).toBe(true);
      expect(verifyWebhookSignature({ secret: SECRETS[other], body: got.body, header: got.signature })).toEqual({
        ok: false,
        reason: 'mismatch',
      });
      expect(JSON.parse(got.body)).toEqual({
        type: 'approval.requested',
        approvalId: 'apr_1',
        operationId: 'op_1',
        runId: 'run_1',
        toolName: 'charge_card',
        summary: request.summary,
        url: `https://runner.example/v1/approvals/apr_1?sig=${own}`,
        expiresAt: '2026-12-02T10:00:00.000Z',
      });
      // No other approver's link, and never the configuration's secret.
      for (const foreign of ['ALICE-SIG', 'BOB-SIG', 'CAROL-SIG'].filter((s) => s !== own)) expect(got.body).not.toContain(foreign);
      expect(got.body).not.toContain('the-config-secret-that-signs-links');
    }
    expect(metrics.snapshot()).toEqual([]);
  });

  it('retries after 500s with growing, jittered pauses, signing each attempt afresh', async () => {
    const hook = await receiver((n, _req, res) => {
      res.statusCode = n <= 2 ? 500 : 204;
      res.end();
    });
    const metrics = memoryMetrics();
    // The largest pause full jitter allows, so the gaps can be checked: 100 ms, then 200 ms.
    const channel = webhookChannel({ config: configWith({ alice: `${hook.url}/alice` }), policy: quick, random: () => 1 });
    await makeNotifier([channel], { metrics }).approvalRequested(request);
    expect(hook.received).toHaveLength(3);
    const [a, b, c] = hook.received;
    expect(b.at - a.at).toBeGreaterThanOrEqual(100);
    expect(c.at - b.at).toBeGreaterThanOrEqual(200);
    expect(new Set(hook.received.map((r) => r.body)).size).toBe(1);
    for (const r of hook.received)
      expect(verifyWebhookSignature({ secret: SECRETS.alice, body: r.body, header: r.signature }).ok).toBe(true);
    expect(metrics.snapshot()).toEqual([]);
  });

  it('gives an attempt that times out another one', async () => {
    // The first request is never answered: the attempt's own timeout ends it.
    const hook = await receiver((n, _req, res) => {
      if (n > 1) res.end('ok');
    });
    const metrics = memoryMetrics();
    const started = Date.now();
    await makeNotifier([webhookChannel({ config: configWith({ alice: `${hook.url}/alice` }), policy: quick })], {
      metrics,
    }).approvalRequested(request);
    expect(hook.received).toHaveLength(2);
    expect(hook.received[1].at - started).toBeGreaterThanOrEqual(quick.attemptTimeoutMs!);
    expect(metrics.snapshot()).toEqual([]);
  });

  it('counts a delivery that keeps failing as NotificationFailures{channel=webhook}, and logs the host, never the link', async () => {
    const failing = await receiver((_n, _req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const fine = await receiver();
    const metrics = memoryMetrics();
    const logs: Record<string, unknown>[] = [];
    const channel = webhookChannel({
      config: configWith({ alice: `${failing.url}/alice?token=receiver-secret`, bob: `${fine.url}/bob` }),
      policy: { ...quick, maxAttempts: 3 },
      log: (line) => logs.push(line),
    });
    await makeNotifier([channel], { metrics, log: (line) => logs.push(line) }).approvalRequested(request);
    expect(failing.received).toHaveLength(3);
    expect(fine.received).toHaveLength(1);
    expect(metrics.snapshot()).toEqual([{ name: MetricName.notificationFailures, dimensions: { channel: 'webhook' }, value: 1 }]);
    expect(JSON.stringify(logs)).toContain(new URL(failing.url).host);
    expect(JSON.stringify(logs)).not.toMatch(/SIG|receiver-secret/);
    // The alarm watches exactly this name.
    expect(WATCHED_METRICS.notificationFailures).toBe(MetricName.notificationFailures);
  });

  it('does not retry a refusal (410), and counts it', async () => {
    const hook = await receiver((_n, _req, res) => {
      res.statusCode = 410;
      res.end();
    });
    const metrics = memoryMetrics();
    await makeNotifier([webhookChannel({ config: configWith({ alice: `${hook.url}/alice` }), policy: quick, log: () => undefined })], {
      metrics,
      log: () => undefined,
    }).approvalRequested(request);
    expect(hook.received).toHaveLength(1);
    expect(metrics.snapshot()).toEqual([{ name: MetricName.notificationFailures, dimensions: { channel: 'webhook' }, value: 1 }]);
  });

  it('stops at its deadline, so the RequestApproval Lambda ends within its timeout', async () => {
    const hook = await receiver(() => undefined);
    const policy = { ...quick, deadlineMs: 2_500 };
    const started = Date.now();
    await makeNotifier([webhookChannel({ config: configWith({ alice: `${hook.url}/alice` }), policy, log: () => undefined })], {
      log: () => undefined,
    }).approvalRequested(request);
    expect(Date.now() - started).toBeLessThan(policy.deadlineMs + 500);
    expect(hook.received.length).toBeGreaterThanOrEqual(2);
    // As deployed: every retry of a request ends 10 s before the Lambda's own timeout (the step's writes, SNS).
    expect(WEBHOOK_DELIVERY.deadlineMs).toBeLessThanOrEqual(FUNCTIONS.RequestApproval.timeoutSeconds * 1000 - 10_000);
  });

  it('refuses a plain-HTTP webhook outside loopback, and a notify.secret that is a key or the links secret', () => {
    const parse = (notify: unknown, approvalSecret = 'the-config-secret-that-signs-links') =>
      RunnerConfigSchema.safeParse({
        approvalSecret,
        principals: [{ id: 'a', key: 'a-key-0123456789abcdef', roles: ['approver'], tools: [], notify }],
      }).success;
    expect(parse({ webhookUrl: 'https://hooks.example.com/x', secret: SECRETS.alice })).toBe(true);
    expect(parse({ webhookUrl: 'http://127.0.0.1:9/x', secret: SECRETS.alice })).toBe(true);
    expect(parse({ webhookUrl: 'http://hooks.example.com/x', secret: SECRETS.alice })).toBe(false);
    expect(parse({ webhookUrl: 'https://hooks.example.com/x', secret: 'short' })).toBe(false);
    expect(parse({ webhookUrl: 'https://hooks.example.com/x', secret: 'a-key-0123456789abcdef' })).toBe(false);
    expect(parse({ webhookUrl: 'https://hooks.example.com/x', secret: 'the-config-secret-that-signs-links' })).toBe(false);
  });
});

describe('SNS: links to the links topic with approverId, link-free notices to the notices topic', () => {
  it('publishes each link with its approver as a message attribute, and no link to the notices topic', async () => {
    // A real SNS client against a local endpoint that records each Publish (SNS's query protocol).
    const published: URLSearchParams[] = [];
    const sns = await receiver((_n, _req, res) => {
      res.setHeader('content-type', 'text/xml');
      res.end(
        '<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>m-1</MessageId></PublishResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></PublishResponse>',
      );
    });
    const client = new SNSClient({
      endpoint: sns.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const links = 'arn:aws:sns:us-east-1:000000000000:links';
    const notices = 'arn:aws:sns:us-east-1:000000000000:notices';
    const notifier = makeNotifier([snsChannel(client, { linksTopicArn: links, noticesTopicArn: notices })]);
    await notifier.approvalRequested(request);
    await notifier.approvalDecided({
      approvalId: 'apr_1',
      operationId: 'op_1',
      runId: 'run_1',
      toolName: 'charge_card',
      decision: 'approved',
      decidedBy: 'alice',
    });
    await notifier.reviewRequired({ operationId: 'op_2', runId: 'run_1', toolName: 'send_email', reason: 'the outcome is unknown' });
    published.push(...sns.received.map((r) => new URLSearchParams(r.body)));

    const attribute = (p: URLSearchParams, name: string) => {
      for (let i = 1; p.has(`MessageAttributes.entry.${i}.Name`); i++)
        if (p.get(`MessageAttributes.entry.${i}.Name`) === name) return p.get(`MessageAttributes.entry.${i}.Value.StringValue`);
      return undefined;
    };
    const toLinks = published.filter((p) => p.get('TopicArn') === links);
    const toNotices = published.filter((p) => p.get('TopicArn') === notices);
    expect(toLinks.map((p) => attribute(p, 'approverId')).sort()).toEqual(['alice', 'bob', 'carol']);
    for (const p of toLinks) {
      const own = `${attribute(p, 'approverId')!.toUpperCase()}-SIG`;
      expect(p.get('Message')).toContain(own);
      for (const foreign of ['ALICE-SIG', 'BOB-SIG', 'CAROL-SIG'].filter((s) => s !== own)) expect(p.get('Message')).not.toContain(foreign);
    }
    expect(toNotices.map((p) => attribute(p, 'type'))).toEqual(['approval.requested', 'approval.decided', 'review.required']);
    for (const p of toNotices) expect(p.get('Message')).not.toMatch(/sig=|SIG|https?:\/\//);
    expect(toNotices[0].get('Message')).toContain('$600.00');
  });
});
