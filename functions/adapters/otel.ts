import { context, defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TRACEPARENT } from '../core/trace-context';
import type { Telemetry } from '../core/ports';
import { endAttributes, GEN_AI_NAMES, startAttributes } from '../core/span-attributes';

const propagator = new W3CTraceContextPropagator();

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
        `${GEN_AI_NAMES.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${start.toolName}`,
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
