import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { otelTelemetry } from '../../functions/adapters/otel';
import { startOtlpExport } from '../../functions/adapters/otlp-export';
import { flushingTelemetry } from '../../functions/handlers/flush-telemetry';
import { trace } from '@opentelemetry/api';
import { storedResultOf } from '../../functions/core/result-record';

/** A stand-in OTLP/HTTP collector: records what reaches it. */
const received: { path: string; contentType?: string; bytes: number; body: Buffer }[] = [];
const collector = createServer((req: IncomingMessage, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    received.push({ path: req.url ?? '', contentType: req.headers['content-type'], bytes: body.length, body });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
afterAll(() => new Promise<void>((r) => collector.close(() => r())));
// The exporter reads the standard variables from the process: files that share this worker must not inherit them.
afterAll(() => {
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
});

describe('OTLP export', () => {
  it('registers nothing unless the standard variables ask for it', () => {
    expect(startOtlpExport({})).toBeUndefined();
    expect(startOtlpExport({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('sends execute_tool spans to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces', async () => {
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    const exporting = startOtlpExport(process.env);
    expect(exporting).toBeDefined();
    const telemetry = otelTelemetry();
    const start = {
      toolName: 'get_order',
      callId: 'call_x',
      operationId: 'op_x',
      runId: 'run_x',
      attempt: 1,
      risk: 'read' as const,
      idempotencyKeySent: false,
      replaySafe: true,
      approval: 'not_required' as const,
      policyDecision: 'allow' as const,
      approvalRequired: false,
      idempotencyKeySha256: '0'.repeat(64),
    };
    await telemetry.attemptSpan(
      start,
      async () => 'ok',
      () => ({ outcome: { kind: 'succeeded', result: storedResultOf(null) }, upstreamStatus: 200, latencyMs: 3 }),
    );
    await exporting!.shutdown();
    const traces = received.filter((r) => r.path === '/v1/traces');
    expect(traces.length).toBeGreaterThanOrEqual(1);
    const text = traces.map((t) => t.body.toString('utf8')).join('');
    expect(text).toContain('execute_tool get_order');
    expect(text).toContain('gen_ai.tool.call.id');
  });
});

describe('spans at the end of an invocation', () => {
  it('are sent before a handler returns, not left in the batch for a frozen Lambda', async () => {
    if (!collector.listening) await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    // The API keeps the first global provider registered; the one above was shut down, so clear it first.
    trace.disable();
    const exporting = startOtlpExport({ ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    try {
      const before = received.length;
      const handler = flushingTelemetry(async () => {
        trace.getTracer('test').startActiveSpan('invocation work', (span) => span.end());
        return 'done';
      });
      expect(await handler()).toBe('done');
      // The batch processor waits 5 s by default: the span is there at once only because the handler flushed it.
      const sent = received
        .slice(before)
        .map((r) => r.body.toString('utf8'))
        .join('');
      expect(sent).toContain('invocation work');
    } finally {
      await exporting!.shutdown();
    }
  });
});
