import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../../functions/core/metric-names';
import { verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER } from '../../functions/core/webhook-signature';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode, isEmbedded } from '../support/target';

/**
 * Approvers' webhooks through the whole runner: the RequestApproval step posts each approver's own link,
 * signed with that approver's own secret, to a real HTTP receiver; the link opens the approval page as
 * that approver and decides the call.
 */

interface Delivery {
  path: string;
  body: string;
  signature?: string;
}

let stack: TestStack;
let server: Server;
let hookUrl: string;
const deliveries: Delivery[] = [];
const people = {
  alice: { key: 'tr_alice_key_0123456789abcdef', secret: 'alice-receiver-secret-0123456789' },
  bob: { key: 'tr_bob_key_0123456789abcdefgh', secret: 'bob-receiver-secret-0123456789ab' },
  carol: { key: 'tr_carol_key_0123456789abcdef', secret: 'carol-receiver-secret-012345678' },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        signature: req.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()] as string | undefined,
      });
      // Carol's receiver refuses (410): a failure that is not retried, and is counted.
      res.statusCode = req.url === '/carol' ? 410 : 204;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stack = await startTestStack();
});

afterAll(async () => {
  await stack?.stop();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describe.runIf(isEmbedded)('approvers’ webhooks', () => {
  it('posts each approver its own signed link, and that link decides as that approver', async () => {
    const { api, keys } = stack;
    stack.editConfig((config) => {
      for (const [id, p] of Object.entries(people))
        config.principals.push({
          id,
          key: p.key,
          roles: ['approver'],
          tools: [],
          notify: { webhookUrl: `${hookUrl}/${id}`, secret: p.secret },
        });
    });
    await api.until(
      'the new approvers to be known',
      async () => (await api.request('GET', '/v1/approvals?status=pending', { key: people.alice.key })).status,
      (status) => status === 200,
    );
    const runId = await api.createRun(keys.agent, { maxSpendCents: 1_000_000 });
    const call = await api.call(keys.agent, runId, {
      callId: 'call_hook',
      name: 'charge_card',
      arguments: { amount: 75_000, currency: 'USD', customer: 'cus_hook' },
    });
    expect(call.body.state).toBe('awaiting_approval');
    const operationId = call.body.operationId as string;
    await api.until(
      'a delivery to each receiver',
      async () => deliveries.map((d) => d.path).sort(),
      (paths) => paths.join() === '/alice,/bob,/carol',
    );

    // Each approver's own link, as GET /v1/approvals lists it for that approver's key.
    const linkOf = async (key: string) =>
      ((await api.client(key).listApprovals()).find((a) => a.operationId === operationId) as { url: string }).url;
    const links = { alice: await linkOf(people.alice.key), bob: await linkOf(people.bob.key), carol: await linkOf(people.carol.key) };
    const approverLink = await linkOf(keys.approver);
    for (const id of ['alice', 'bob'] as const) {
      const got = deliveries.find((d) => d.path === `/${id}`)!;
      expect(verifyWebhookSignature({ secret: people[id].secret, body: got.body, header: got.signature }).ok).toBe(true);
      for (const other of (['alice', 'bob', 'carol'] as const).filter((o) => o !== id))
        expect(verifyWebhookSignature({ secret: people[other].secret, body: got.body, header: got.signature }).ok).toBe(false);
      const payload = JSON.parse(got.body);
      expect(Object.keys(payload).sort()).toEqual([
        'approvalId',
        'approvalLines',
        'arguments',
        'expiresAt',
        'inputHash',
        'operationId',
        'runId',
        'summary',
        'toolName',
        'type',
        'url',
      ]);
      expect(payload).toMatchObject({ type: 'approval.requested', operationId, runId, toolName: 'charge_card', url: links[id] });
      // The arguments as the approval page shows them (canonical key order), beside the fields above.
      expect(payload.arguments).toEqual([
        { path: 'amount', text: '75000', shown: 'exact' },
        { path: 'currency', text: 'USD', shown: 'exact' },
        { path: 'customer', text: 'cus_hook', shown: 'exact' },
      ]);
      expect(payload.approvalLines).toEqual([
        'Charge $750.00 (75000 in minor units of USD) to customer cus_hook.',
        'Charges of 50000 minor units or more need a person to approve.',
      ]);
      expect(payload.summary).toBe(
        `agent asks to run charge_card (irreversible write) in run ${runId}; it counts $750.00 against the run's spend budget.`,
      );
      // Another approver's link never appears in this approver's body.
      for (const [other, url] of Object.entries({ ...links, approver: approverLink }))
        if (other !== id) expect(got.body).not.toContain(new URL(url).searchParams.get('sig')!);
    }

    // Bob's link opens the page as Bob, and deciding through it decides as Bob.
    const bobPayload = JSON.parse(deliveries.find((d) => d.path === '/bob')!.body);
    const page = await fetch(bobPayload.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<dt>You are<\/dt><dd>bob<\/dd>/);
    const sig = new URL(bobPayload.url).searchParams.get('sig');
    const decided = await api.request('POST', `/v1/approvals/${bobPayload.approvalId}`, { body: { decision: 'approve', sig } });
    expect(decided.status).toBe(200);
    const op = await api.until(
      'the charge reported',
      () => api.operation(keys.agent, operationId),
      (o) => o.state === 'reported',
    );
    expect(op.approval).toMatchObject({ state: 'approved', decidedBy: 'bob' });
    expect(op.envelope).toMatchObject({ status: 'succeeded' });
    // Carol's receiver answered 410: one delivery, not retried.
    expect(deliveries.filter((d) => d.path === '/carol')).toHaveLength(1);
  });

  // The counters live in the process that ran the step: the embedded stack's, when it runs the sources.
  it.runIf(handlerMode === 'source')('counts the refused delivery as NotificationFailures{channel=webhook}', async () => {
    const res = await stack.api.request('GET', '/v1/metrics', { key: stack.keys.admin });
    const failures = (res.body.metrics as { name: string; dimensions: Record<string, string>; value: number }[]).filter(
      (m) => m.name === MetricName.notificationFailures,
    );
    expect(failures).toEqual([{ name: MetricName.notificationFailures, dimensions: { channel: 'webhook' }, value: 1 }]);
  });
});
