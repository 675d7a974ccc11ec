import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An OTLP attribute value as OTLP/JSON writes it (one of these keys is set). */
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}

/** One span as the receiver got it: its name and its attributes decoded to plain values. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  url: string;
  /** Every request body that reached /v1/traces, as text: what a search for leaked values reads. */
  bodies(): string[];
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

function decoded(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(decoded);
  return undefined;
}

interface TracesRequest {
  resourceSpans?: {
    scopeSpans?: { spans?: { name: string; traceId: string; attributes?: { key: string; value: AnyValue }[] }[] }[];
  }[];
}

function spansOf(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as TracesRequest;
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        name: s.name,
        traceId: s.traceId,
        attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, decoded(a.value)])),
      })),
    ),
  );
}

/**
 * A stand-in OTLP/HTTP collector on loopback that reads OTLP/JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`):
 * the spans arrive as an exporter sends them to a real collector, not as the SDK holds them in memory.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies: () => [...bodies],
    spans: () => bodies.flatMap(spansOf),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
