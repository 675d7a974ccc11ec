import { flushSpans } from '../adapters/otlp-export';

/** A handler whose spans are all sent before its invocation returns (functions/adapters/otlp-export.ts). */
export function flushingSpans<A extends unknown[], R>(handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await handler(...args);
    } finally {
      await flushSpans();
    }
  };
}
