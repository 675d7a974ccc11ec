import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** The provider this process registered, if any: what `flushSpans` empties. */
let registered: NodeTracerProvider | undefined;

/**
 * Sends every span still buffered, now. A Lambda is frozen as soon as its invocation returns: a span left in
 * the batch would wait for the next invocation, or be lost with the container. Resolves at once when nothing
 * is exported; never rejects (a collector that is down must not fail the invocation).
 */
export async function flushSpans(): Promise<void> {
  await registered?.forceFlush().catch(() => undefined);
}

export interface OtlpExport {
  /** Flushes the spans still buffered and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Registers an OTLP/HTTP span exporter when the standard variables ask for one (OTEL_EXPORTER_OTLP_ENDPOINT
 * or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; headers, timeout etc. are read by the exporter itself). Without
 * them nothing is registered and the OpenTelemetry API stays a no-op.
 */
export function startOtlpExport(env: NodeJS.ProcessEnv = process.env): OtlpExport | undefined {
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME ?? 'toolrunner' })),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  registered = provider;
  return {
    shutdown: () => {
      if (registered === provider) registered = undefined;
      return provider.shutdown();
    },
  };
}
