import {
  context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TRACEPARENT } from '../core/trace-context';
import type { AttemptSpanEnd, AttemptSpanStart, Telemetry } from '../core/ports';

const propagator = new W3CTraceContextPropagator();

/** The attributes known before the call: GenAI semantic conventions for tool execution, plus the runner's own. */
export function startAttributes(start: AttemptSpanStart): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': start.toolName,
    'gen_ai.tool.call.id': start.callId,
    'gen_ai.tool.type': 'function',
    'toolrunner.operation_id': start.operationId,
    'toolrunner.run_id': start.runId,
    'toolrunner.attempt': start.attempt,
    'toolrunner.risk': start.risk,
    'toolrunner.idempotency.key_sent': start.idempotencyKeySent,
    'toolrunner.idempotency.replay_safe': start.replaySafe,
    'toolrunner.approval': start.approval,
  };
}

/** The attributes of the attempt's end: its outcome class, code and the upstream's status. */
export function endAttributes(end: AttemptSpanEnd): Attributes {
  return {
    'toolrunner.outcome': end.outcome.kind,
    ...('code' in end.outcome ? { 'toolrunner.outcome.code': end.outcome.code, 'error.type': end.outcome.code } : {}),
    ...(end.upstreamStatus !== undefined ? { 'toolrunner.upstream.status_code': end.upstreamStatus } : {}),
    'toolrunner.latency_ms': end.latencyMs,
  };
}

/**
 * The telemetry port on the OpenTelemetry API: one `execute_tool <tool>` span per attempt, child of the
 * caller's traceparent when the submission carried one. With no SDK registered the API is a no-op, so
 * this costs nothing unless OTLP export is configured.
 */
export function otelTelemetry(tracer: Tracer = trace.getTracer('toolrunner')): Telemetry {
  return {
    attemptSpan(start, attempt, end) {
      const parent =
        start.traceparent && TRACEPARENT.test(start.traceparent)
          ? propagator.extract(ROOT_CONTEXT, { traceparent: start.traceparent }, defaultTextMapGetter)
          : context.active();
      return tracer.startActiveSpan(
        `execute_tool ${start.toolName}`,
        { kind: SpanKind.INTERNAL, attributes: startAttributes(start) },
        parent,
        async (span) => {
          try {
            const result = await attempt();
            const finished = end(result);
            span.setAttributes(endAttributes(finished));
            if (finished.outcome.kind !== 'succeeded') span.setStatus({ code: SpanStatusCode.ERROR, message: finished.outcome.kind });
            return result;
          } catch (error) {
            // Why not recordException: it would export the stack; the name says enough and nothing leaks.
            span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
            throw error;
          } finally {
            span.end();
          }
        },
      );
    },
  };
}
