import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { otelTelemetry } from '../../functions/adapters/otel';
import { startTestStack, type TestStack } from '../support/stack';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_SPAN = 'b7ad6b7169203331';
const charge = (amount: number) => ({ amount, currency: 'USD', customer: 'cus_otel', description: 'spans' });

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 7 });
  // The runner's own adapter on a tracer that keeps spans in memory: the real steps, the real sandbox.
  stack.deps!.telemetry = otelTelemetry(provider.getTracer('toolrunner'));
});
afterAll(async () => {
  await stack?.stop();
  await provider.shutdown();
});
beforeEach(async () => {
  exporter.reset();
  await stack.sandbox.reset();
});

const spansOf = (operationId: string) => exporter.getFinishedSpans().filter((s) => s.attributes['toolrunner.operation_id'] === operationId);

describe('execute_tool spans (OpenTelemetry GenAI conventions)', () => {
  it('one span per attempt, children of the caller’s traceparent: 503, 503, then success gives three', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'fail_503', count: 2 });
    const res = await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
      key: keys.agent,
      body: { callId: 'call_otel', turn: 1, name: 'charge_card', arguments: charge(1300) },
      headers: { prefer: 'wait=25', traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01` },
    });
    expect(res.body).toMatchObject({ status: 'succeeded' });
    const opId = res.body.logical_operation_id;
    const spans = spansOf(opId);
    expect(spans).toHaveLength(3);
    for (const span of spans) {
      expect(span.name).toBe('execute_tool charge_card');
      expect(span.kind).toBe(SpanKind.INTERNAL);
      expect(span.spanContext().traceId).toBe(TRACE_ID);
      expect(span.parentSpanContext?.spanId).toBe(PARENT_SPAN);
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'charge_card',
        'gen_ai.tool.call.id': 'call_otel',
        'toolrunner.operation_id': opId,
        'toolrunner.run_id': runId,
        'toolrunner.risk': 'irreversible_write',
        'toolrunner.idempotency.key_sent': true,
        'toolrunner.idempotency.replay_safe': true,
        'toolrunner.approval': 'not_required',
      });
    }
    expect(
      spans.map((s) => [
        s.attributes['toolrunner.attempt'],
        s.attributes['toolrunner.outcome'],
        s.attributes['toolrunner.upstream.status_code'],
        s.attributes['error.type'],
        s.status.code,
      ]),
    ).toEqual([
      [1, 'failed_retryable', 503, 'upstream_unavailable', SpanStatusCode.ERROR],
      [2, 'failed_retryable', 503, 'upstream_unavailable', SpanStatusCode.ERROR],
      [3, 'succeeded', 200, undefined, SpanStatusCode.UNSET],
    ]);
    // Nothing secret travels in a span: no idempotency key, no arguments.
    // An admin's view holds the key (an agent's never does, and checking for undefined would prove nothing).
    const op = await api.operation(keys.admin, opId);
    expect(op.idempotencyKey).toEqual(expect.any(String));
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(op.idempotencyKey);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('cus_otel');
  });

  it("an MCP 2026-07-28 call's _meta traceparent parents its spans", async () => {
    const { apiUrl, keys } = stack;
    const res = await fetch(`${apiUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.agent}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'get_order',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'get_order',
          arguments: { orderId: 'ord_42' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01`,
          },
        },
      }),
    });
    const body = await res.json();
    expect(body.result.structuredContent).toMatchObject({ status: 'succeeded' });
    const [span] = spansOf(body.result.structuredContent.logical_operation_id);
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.parentSpanContext?.spanId).toBe(PARENT_SPAN);
  });

  it('an approved call says so; without a traceparent (or with a malformed one) the attempt starts its own trace', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const read = await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
      key: keys.agent,
      body: { callId: 'call_plain', turn: 1, name: 'get_order', arguments: { orderId: 'ord_1' } },
      headers: { prefer: 'wait=25', traceparent: '00-not-a-trace-01' },
    });
    expect(read.body).toMatchObject({ status: 'succeeded' });
    const [span] = spansOf(read.body.logical_operation_id);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.attributes).toMatchObject({
      'gen_ai.tool.name': 'get_order',
      'toolrunner.attempt': 1,
      'toolrunner.outcome': 'succeeded',
      'toolrunner.risk': 'read',
      'toolrunner.idempotency.replay_safe': true,
    });

    const big = await api.call(keys.agent, runId, { callId: 'call_big', turn: 2, name: 'charge_card', arguments: charge(75_000) });
    expect(big.status).toBe(202);
    const pending = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = pending.body.approvals.find((a: { operationId: string }) => a.operationId === big.body.operationId);
    const sig = new URL(approval.url).searchParams.get('sig');
    expect((await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status).toBe(200);
    await api.until(
      'reported',
      () => api.operation(keys.agent, big.body.operationId),
      (o) => o.state === 'reported',
    );
    const [approved] = spansOf(big.body.operationId);
    expect(approved.attributes).toMatchObject({
      'toolrunner.approval': 'approved',
      'toolrunner.outcome': 'succeeded',
      'toolrunner.upstream.status_code': 200,
    });
  });
});
