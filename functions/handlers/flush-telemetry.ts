import { flushMetrics } from '../adapters/metrics';
import { flushSpans } from '../adapters/otlp-export';

/**
 * A handler whose telemetry is all out before its invocation returns: its spans sent
 * (functions/adapters/otlp-export.ts) and its metric counts written, as few EMF lines as fit (a frozen
 * container would otherwise hold them until its next invocation, or forever).
 */
export function flushingTelemetry<A extends unknown[], R>(handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await handler(...args);
    } finally {
      flushMetrics();
      await flushSpans();
    }
  };
}
