import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../../functions/core/ports';
import { verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER } from '../../functions/core/webhook-signature';
import { expireApprovalStep } from '../../functions/steps/approval';
import { escalateWaitingApprovals } from '../../functions/steps/escalation';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * `approvalEscalation` through the embedded stack: approvers' webhooks on a loopback receiver hear of a waiting
 * approval at its request, then at each step (the sweeper's escalation pass, run here with its clock moved
 * ahead), each step once across two sweepers at once and a restart between the steps.
 */

interface Delivery {
  to: string;
  kind: string;
  step?: number;
  body: string;
  signature?: string;
}

let stack: TestStack;
let server: Server;
let hookUrl: string;
const deliveries: Delivery[] = [];
const people = {
  alice: { key: 'tr_alice_key_0123456789abcdef', secret: 'alice-receiver-secret-0123456789', roles: ['approver' as const] },
  bob: { key: 'tr_bob_key_0123456789abcdefgh', secret: 'bob-receiver-secret-0123456789ab', roles: ['approver' as const] },
  root: { key: 'tr_root_key_0123456789abcdefg', secret: 'root-receiver-secret-0123456789a', roles: ['admin' as const] },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const payload = JSON.parse(body);
      deliveries.push({
        to: (req.url ?? '').slice(1),
        kind: payload.escalation?.kind ?? payload.type,
        step: payload.escalation?.step,
        body,
        signature: req.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()] as string | undefined,
      });
      res.statusCode = 204;
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

/** What the receiver got, in the order it came, as `to:kind:step`. */
const got = () => deliveries.map((d) => `${d.to}:${d.kind}${d.step === undefined ? '' : `:${d.step}`}`);

describe.runIf(isEmbedded)('reminders and escalation of a waiting approval', () => {
  it('asks each step once, in order, across two sweepers and a restart; traces it; lists it; expiry still says retry', async () => {
    const { keys } = stack;
    // The API moves to another port at the restart: always the stack's current one.
    const api = () => stack.api;
    stack.editConfig((config) => {
      for (const [id, p] of Object.entries(people))
        config.principals.push({ id, key: p.key, roles: p.roles, tools: [], notify: { webhookUrl: `${hookUrl}/${id}`, secret: p.secret } });
      config.approvalTtlSeconds = 3600;
      config.approvalEscalation = [
        { afterMinutes: 10, principals: ['bob'] },
        { afterMinutes: 30, roles: ['admin'] },
      ];
    });
    await api().until(
      'the new config to be read',
      async () => (await api().request('GET', '/v1/approvals?status=pending', { key: people.root.key })).status,
      (status) => status === 200,
    );
    const runId = await api().createRun(keys.agent, { maxSpendCents: 1_000_000 });
    const call = await api().call(keys.agent, runId, {
      callId: 'call_escalate',
      name: 'charge_card',
      arguments: { amount: 75_000, currency: 'USD', customer: 'cus_escalate' },
    });
    expect(call.body.state).toBe('awaiting_approval');
    const operationId = call.body.operationId as string;
    // Asked at once: only the approvers no step keeps back (bob and the admins wait for their step).
    await api().until(
      'the first request',
      async () => got(),
      (g) => g.length >= 1,
    );
    expect(got()).toEqual(['alice:approval.requested']);

    const requestedAt = Date.parse((await stack.deps!.store.getOperation(operationId))!.approval!.requestedAt!);
    // The sweeper's pass with its clock `minutes` after the request (the stack's own sweeper runs on the real clock).
    const sweepAt = (minutes: number) => escalateWaitingApprovals({ ...(stack.deps as Deps), now: () => requestedAt + minutes * 60_000 });

    expect(await sweepAt(9)).toEqual([]);
    const [one, two] = await Promise.all([sweepAt(10), sweepAt(10)]);
    expect([...one, ...two]).toEqual([{ operationId, step: 0, escalated: ['bob'], reminded: ['approver', 'alice'] }]);
    expect(got().slice(1).sort()).toEqual(['alice:reminded:0', 'bob:escalated:0']);

    // A restart between the steps: the resumed wait asks no one again, the first step is not sent again.
    await stack.restart!();
    expect(await sweepAt(20)).toEqual([]);
    expect(deliveries).toHaveLength(3);

    const [three, four] = await Promise.all([sweepAt(31), sweepAt(31)]);
    expect([...three, ...four]).toEqual([{ operationId, step: 1, escalated: ['admin', 'root'], reminded: ['approver', 'alice', 'bob'] }]);
    expect(got().slice(3).sort()).toEqual(['alice:reminded:1', 'bob:reminded:1', 'root:escalated:1']);
    expect(await sweepAt(59)).toEqual([]);
    expect(deliveries).toHaveLength(6);

    // Each delivery is signed for its receiver, carries its own link, and says which step it is.
    for (const d of deliveries) {
      const person = people[d.to as keyof typeof people];
      expect(verifyWebhookSignature({ secret: person.secret, body: d.body, header: d.signature }).ok).toBe(true);
      const payload = JSON.parse(d.body);
      expect(payload).toMatchObject({ type: 'approval.requested', operationId, runId, toolName: 'charge_card' });
      if (d.step !== undefined) expect(payload.escalation).toEqual({ kind: d.kind, step: d.step, afterMinutes: d.step === 0 ? 10 : 30 });
      const mine = (await api().client(person.key).listApprovals()).find((a) => a.operationId === operationId)!;
      expect(new URL(payload.url).searchParams.get('sig')).toBe(new URL(mine.url).searchParams.get('sig'));
    }
    // Never the requester or the run's owner.
    expect(deliveries.map((d) => d.to)).not.toContain('agent');

    const trace = (await api().trace(keys.admin, runId)).filter((e) => e.type === 'approval.escalated' || e.type === 'approval.reminded');
    expect(trace.map((e) => [e.type, e.detail?.step, e.detail?.recipients])).toEqual([
      ['approval.escalated', 0, ['bob']],
      ['approval.reminded', 0, ['approver', 'alice']],
      ['approval.escalated', 1, ['admin', 'root']],
      ['approval.reminded', 1, ['approver', 'alice', 'bob']],
    ]);
    const listed = (await api().client(people.alice.key).listApprovals()).find((a) => a.operationId === operationId)!;
    expect(listed.escalations?.map((e) => [e.step, e.at, e.escalated, e.reminded])).toEqual([
      [0, new Date(requestedAt + 10 * 60_000).toISOString(), ['bob'], ['approver', 'alice']],
      [1, new Date(requestedAt + 31 * 60_000).toISOString(), ['admin', 'root'], ['approver', 'alice', 'bob']],
    ]);

    // Nobody decided: it expires, and the model is told it may try again with a new call id.
    const expiresAt = Date.parse(listed.expiresAt);
    await expireApprovalStep({ ...(stack.deps as Deps), now: () => expiresAt + 1000 }, operationId);
    const op = await api().operation(keys.agent, operationId);
    expect(op.envelope).toMatchObject({ status: 'rejected', code: 'approval_expired' });
    expect(op.envelope.allowed_next_actions).toContain('retry_with_new_call_id');
    expect(await sweepAt(59)).toEqual([]);
  });
});
