import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval } from '../support/people';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { startUpstreamMcp } from '../support/upstream-mcp';

let stack: TestStack;
let upstream: Awaited<ReturnType<typeof startUpstreamMcp>>;
let modern: Awaited<ReturnType<typeof startUpstreamMcp>>;
beforeAll(async () => {
  upstream = await startUpstreamMcp();
  modern = await startUpstreamMcp({ revision: '2026-07-28' });
  stack = await startTestStack({ seed: 5 });
  stack.editConfig((config) => {
    config.mcpUpstreams = [
      {
        name: 'helpdesk',
        url: upstream.url,
        headers: { authorization: 'Bearer upstream-secret' },
        tools: {
          create_ticket: { risk: 'irreversible_write', supportsIdempotency: true, maxAttempts: 3, timeoutMs: 5_000 },
          refund: { risk: 'irreversible_write', approval: 'always', supportsIdempotency: true },
        },
      },
      {
        name: 'modern',
        url: modern.url,
        tools: { create_ticket: { risk: 'irreversible_write', supportsIdempotency: true, maxAttempts: 3, timeoutMs: 5_000 } },
      },
    ];
  });
});
afterAll(async () => {
  await stack?.stop();
  await upstream?.close();
  await modern?.close();
});

describe('MCP proxy mode', () => {
  it('registers each upstream tool as <name>__<tool> with its schema and configured policy', async () => {
    const { api, keys } = stack;
    const listed = await api.request('GET', '/v1/tools?format=neutral', { key: keys.agent });
    const tools = Object.fromEntries(listed.body.tools.map((t: any) => [t.name, t]));
    // Configured; from the upstream's readOnlyHint; configured with approval.
    expect(tools.helpdesk__create_ticket).toMatchObject({
      risk: 'irreversible_write',
      maxAttempts: 3,
      supportsIdempotency: true,
      approval: 'never',
      inputSchema: { properties: { title: { type: 'string' } } },
    });
    expect(tools.helpdesk__lookup).toMatchObject({ risk: 'read', approval: 'never', description: 'Look up a ticket.' });
    expect(tools.helpdesk__refund).toMatchObject({ risk: 'irreversible_write', approval: 'always' });
    // Not configured and not read-only: the most careful policy.
    expect(tools.helpdesk__close_ticket).toMatchObject({
      risk: 'irreversible_write',
      maxAttempts: 1,
      supportsIdempotency: false,
      approval: 'never',
    });
    const mcp = await api.request('GET', '/v1/tools?format=mcp', { key: keys.agent });
    expect(mcp.body.tools.find((t: any) => t.name === 'helpdesk__lookup').annotations).toMatchObject({ readOnlyHint: true });
  });

  it('a read goes through the lifecycle to the upstream; its schema is enforced before any call', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const read = await api.call(keys.agent, runId, { callId: 'c_lookup', name: 'helpdesk__lookup', arguments: { id: 'T-9' } });
    expect(read.body).toMatchObject({ status: 'succeeded', result: { id: 'T-9', status: 'open' } });
    expect(upstream.record.received.at(-1)).toMatchObject({
      tool: 'lookup',
      key: expect.stringMatching(/^idk_/),
      authorization: 'Bearer upstream-secret',
    });

    const before = upstream.record.received.length;
    const invalid = await api.call(keys.agent, runId, { callId: 'c_bad', name: 'helpdesk__lookup', arguments: { id: 42 } });
    expect(invalid.body).toMatchObject({ status: 'rejected', code: 'invalid_arguments' });
    expect(upstream.record.received).toHaveLength(before);
  });

  it('a write retried after a 503 sends the same idempotency key and runs once', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    upstream.failNext('create_ticket', 1);
    const from = upstream.record.received.length;
    const res = await api.call(keys.agent, runId, {
      callId: 'c_ticket',
      name: 'helpdesk__create_ticket',
      arguments: { title: 'Printer on fire' },
    });
    expect(res.body).toMatchObject({ status: 'succeeded', result: { title: 'Printer on fire' } });

    const sent = upstream.record.received.slice(from);
    expect(sent.map((s) => s.tool)).toEqual(['create_ticket', 'create_ticket']);
    expect(sent[0].key).toMatch(/^idk_/);
    expect(sent[1].key).toBe(sent[0].key);
    expect(upstream.record.tickets.filter((t) => t.title === 'Printer on fire')).toEqual([{ title: 'Printer on fire', key: sent[0].key }]);
    const op = await api.operation(keys.reviewer, res.body.logical_operation_id);
    expect(op.idempotencyKey).toBe(sent[0].key);

    const events = await api.trace(keys.agent, runId);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'attempt.finished',
      'backoff.scheduled',
      'attempt.started',
      'attempt.finished',
      'executing>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(events.filter((e) => e.type === 'attempt.finished').map((e) => e.detail!.upstreamStatus)).toEqual([503, 200]);
  });

  it('applies authorization and the approval policy', async () => {
    const { api, keys } = stack;
    const otherRun = await api.createRun(keys.other);
    const forbidden = await api.call(keys.other, otherRun, { callId: 'c_forbidden', name: 'helpdesk__lookup', arguments: { id: 'T-1' } });
    expect(forbidden.body).toMatchObject({ status: 'rejected', code: 'forbidden' });

    const runId = await api.createRun(keys.agent);
    const pending = await api.call(keys.agent, runId, { callId: 'c_refund', name: 'helpdesk__refund', arguments: { amount: 500 } });
    expect(pending).toMatchObject({ status: 202, body: { state: 'awaiting_approval' } });
    expect(upstream.record.refunds).toEqual([]);
    await decideApproval(stack, pending.body.operationId, 'approve');
    const op = await api.until(
      'the refund to report',
      () => api.operation(keys.agent, pending.body.operationId),
      (o) => o.state === 'reported',
    );
    expect(op.envelope).toMatchObject({ status: 'succeeded', result: { content: [{ type: 'text', text: 'refunded 500' }] } });
    expect(upstream.record.refunds).toEqual([500]);
  });

  it('speaks 2026-07-28 to an upstream that does (no handshake), 2025-11-25 to the others; a retried write still runs once', async () => {
    const { api, keys } = stack;
    const listed = await api.request('GET', '/v1/tools?format=neutral', { key: keys.agent });
    expect(
      listed.body.tools
        .filter((t: any) => t.name.startsWith('modern__'))
        .map((t: any) => t.name)
        .sort(),
    ).toEqual(['modern__create_ticket', 'modern__lookup']);
    const runId = await api.createRun(keys.agent);
    modern.failNext('create_ticket', 1);
    const from = modern.record.received.length;
    const res = await api.call(keys.agent, runId, {
      callId: 'c_modern',
      name: 'modern__create_ticket',
      arguments: { title: 'Modern printer' },
    });
    expect(res.body).toMatchObject({ status: 'succeeded', result: { title: 'Modern printer' } });
    const sent = modern.record.received.slice(from);
    expect(sent.map((s) => s.tool)).toEqual(['create_ticket', 'create_ticket']);
    expect(sent[1].key).toBe(sent[0].key);
    expect(modern.record.tickets.filter((t) => t.title === 'Modern printer')).toEqual([{ title: 'Modern printer', key: sent[0].key }]);
    const events = await api.trace(keys.agent, runId);
    expect(events.filter((e) => e.type === 'attempt.finished').map((e) => e.detail!.upstreamStatus)).toEqual([503, 200]);

    // Every request the modern upstream saw was at 2026-07-28, none a handshake; the other one was asked to initialize.
    expect(modern.record.requests.length).toBeGreaterThan(0);
    expect(modern.record.requests.filter((r) => r.revision !== '2026-07-28' || r.method === 'initialize')).toEqual([]);
    expect(modern.record.requests.map((r) => r.method)).toContain('server/discover');
    expect(upstream.record.requests.map((r) => r.method)).toContain('initialize');
  });
});
