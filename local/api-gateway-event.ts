import { randomBytes, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

/** An API Lambda's handler as an HTTP API calls it (payload format 2.0). */
export type HttpApiHandler = (event: APIGatewayProxyEventV2, context: unknown) => Promise<APIGatewayProxyResultV2>;

/**
 * What API Gateway answers by itself, before or instead of the Lambda. An HTTP API cannot rewrite these
 * bodies (it has no gateway responses), so they keep the gateway's `{ "message": ... }` shape.
 */
export const GATEWAY_ANSWERS = {
  /** No route matches the method and path. */
  notFound: { status: 404, message: 'Not Found' },
  /** The body is over the HTTP API's 10 MB payload limit. */
  tooLarge: { status: 413, message: 'Request Entity Too Large' },
  /** Stage throttling (rate or burst). */
  throttled: { status: 429, message: 'Too Many Requests' },
  /** The function failed (threw, crashed, or returned something that is not a response). */
  integrationFailed: { status: 500, message: 'Internal Server Error' },
  /** The integration did not answer within its timeout (30 s at most). */
  integrationTimeout: { status: 503, message: 'Service Unavailable' },
} as const;
export type GatewayAnswer = keyof typeof GATEWAY_ANSWERS;

/** The response API Gateway sends for one of its own answers. */
export function gatewayAnswer(kind: GatewayAnswer): Response {
  const { status, message } = GATEWAY_ANSWERS[kind];
  return new Response(JSON.stringify({ message }), { status, headers: { 'content-type': 'application/json' } });
}

/** The route an HTTP API picked for a request: its key (`ANY /v1/{proxy+}`) and the path variables it bound. */
export interface RouteMatch {
  routeKey: string;
  pathParameters?: Record<string, string>;
}

interface ParsedRoute {
  key: string;
  method: string;
  segments: string[];
  greedy: boolean;
}

function parseRoute(key: string): ParsedRoute | undefined {
  if (key === '$default') return undefined;
  const [method, path = ''] = key.split(' ');
  const segments = path.split('/').slice(1);
  return { key, method, segments, greedy: /^\{[^}]+\+\}$/.test(segments.at(-1) ?? '') };
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Path variables if `path` matches the route's path, else undefined. */
function bind(route: ParsedRoute, path: string): Record<string, string> | undefined {
  const parts = path.split('/').slice(1);
  const fixed = route.greedy ? route.segments.slice(0, -1) : route.segments;
  if (route.greedy ? parts.length <= fixed.length : parts.length !== fixed.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, segment] of fixed.entries()) {
    const variable = /^\{([^}+]+)\}$/.exec(segment)?.[1];
    if (variable) {
      if (!parts[i]) return undefined;
      params[variable] = decoded(parts[i]);
    } else if (segment !== parts[i]) return undefined;
  }
  if (route.greedy) {
    const rest = parts.slice(fixed.length).join('/');
    if (!rest) return undefined;
    params[route.segments.at(-1)!.slice(1, -2)] = decoded(rest);
  }
  return params;
}

/**
 * Route selection as an HTTP API does it: the most specific match wins (a path without greedy variable
 * over a greedy one, more literal segments first, a named method over `ANY`), then `$default` if the API
 * has one; `undefined` is the gateway's own 404.
 */
export function matchRoute(routeKeys: readonly string[], method: string, path: string): RouteMatch | undefined {
  const candidates = routeKeys
    .map(parseRoute)
    .filter((r): r is ParsedRoute => r !== undefined && (r.method === 'ANY' || r.method === method.toUpperCase()))
    .map((route) => ({ route, params: bind(route, path) }))
    .filter((c): c is { route: ParsedRoute; params: Record<string, string> } => c.params !== undefined);
  const literal = (r: ParsedRoute) => r.segments.filter((s) => !s.startsWith('{')).length;
  candidates.sort(
    (a, b) =>
      Number(a.route.greedy) - Number(b.route.greedy) ||
      literal(b.route) - literal(a.route) ||
      b.route.segments.length - a.route.segments.length ||
      Number(a.route.method === 'ANY') - Number(b.route.method === 'ANY'),
  );
  const best = candidates[0];
  if (best) return { routeKey: best.route.key, ...(Object.keys(best.params).length ? { pathParameters: best.params } : {}) };
  return routeKeys.includes('$default') ? { routeKey: '$default' } : undefined;
}

/**
 * Media types an HTTP API hands to Lambda as text; every other body (form posts and a missing
 * `Content-Type` included) arrives base64-encoded with `isBase64Encoded: true`.
 */
export function isTextBody(contentType: string | null): boolean {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  return type.startsWith('text/') || ['application/json', 'application/xml', 'application/javascript'].includes(type);
}

/** `12/Mar/2020:19:03:58 +0000`, as `requestContext.time` carries it. */
function clfTime(date: Date): string {
  const [, day, month, year, time] = /^\w+, (\d+) (\w+) (\d+) ([\d:]+) GMT$/.exec(date.toUTCString()) ?? [];
  return `${day}/${month}/${year}:${time} +0000`;
}

/** Context an event carries that the request itself does not. */
export interface EventOrigin {
  /** Default `000000000000`. */
  accountId?: string;
  /** Default `local`. */
  apiId?: string;
  /** Default `127.0.0.1`. */
  sourceIp?: string;
}

/**
 * The payload-format-2.0 event an HTTP API sends for `request` on `match` through the `$default` stage:
 * header names lower-cased, repeated headers and query parameters comma-joined, cookies moved out of the
 * headers into `cookies`, `rawPath`/`rawQueryString` as sent, the body as text or base64 (`isTextBody`).
 */
export async function httpApiEvent(request: Request, match: RouteMatch, origin: EventOrigin = {}): Promise<APIGatewayProxyEventV2> {
  const url = new URL(request.url);
  const now = new Date();
  const headers: Record<string, string> = {};
  // Headers already lower-cases names and joins repeated ones with ", ".
  request.headers.forEach((value, key) => {
    if (key !== 'cookie') headers[key] = value;
  });
  const sourceIp = origin.sourceIp ?? '127.0.0.1';
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${sourceIp}` : sourceIp;
  headers['x-forwarded-proto'] = url.protocol.replace(':', '');
  headers['x-forwarded-port'] = url.port || (url.protocol === 'https:' ? '443' : '80');
  headers['x-amzn-trace-id'] = `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
  const cookies = (request.headers.get('cookie') ?? '')
    .split(';')
    .map((c) => c.trim())
    .filter(Boolean);
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = key in query ? `${query[key]},${value}` : value;
  const bytes = request.body ? Buffer.from(await request.arrayBuffer()) : Buffer.alloc(0);
  const text = isTextBody(request.headers.get('content-type'));
  const apiId = origin.apiId ?? 'local';
  return {
    version: '2.0',
    routeKey: match.routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(match.pathParameters ? { pathParameters: match.pathParameters } : {}),
    requestContext: {
      accountId: origin.accountId ?? '000000000000',
      apiId,
      domainName: url.host,
      domainPrefix: url.hostname.split('.')[0],
      http: {
        method: request.method,
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp,
        userAgent: request.headers.get('user-agent') ?? '',
      },
      requestId: randomUUID(),
      routeKey: match.routeKey,
      stage: '$default',
      time: clfTime(now),
      timeEpoch: now.getTime(),
    },
    ...(bytes.length ? { body: text ? bytes.toString('utf8') : bytes.toString('base64') } : {}),
    isBase64Encoded: bytes.length > 0 && !text,
  };
}

/**
 * The HTTP response API Gateway makes of a function's payload-format-2.0 result: a result with a
 * `statusCode` gives its status, headers, `cookies` (one `set-cookie` each) and body (base64-decoded when
 * `isBase64Encoded`); any other value is a 200 JSON body; an invalid status is the gateway's 500.
 */
export function httpApiResponse(result: APIGatewayProxyResultV2, method: string): Response {
  const structured = typeof result === 'object' && result !== null && 'statusCode' in result;
  if (!structured) {
    return new Response(method === 'HEAD' ? null : JSON.stringify(result), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  }
  const status = Number(result.statusCode);
  if (!Number.isInteger(status) || status < 100 || status > 599) return gatewayAnswer('integrationFailed');
  const headers = new Headers();
  for (const [key, value] of Object.entries(result.headers ?? {})) headers.set(key, String(value));
  for (const cookie of result.cookies ?? []) headers.append('set-cookie', cookie);
  const body = result.body === undefined ? '' : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
  const bodyless = status === 204 || status === 304 || method === 'HEAD';
  return new Response(bodyless ? null : body, { status, headers });
}

/**
 * Serves a fetch-style request with an API Lambda's handler the way an HTTP API with these routes
 * (`$default` stage, Lambda proxy integration, payload format 2.0) calls it: an unrouted path is the
 * gateway's 404, a function that throws is the gateway's 500.
 */
export function viaHttpApiEvent(
  handler: () => Promise<HttpApiHandler>,
  routeKeys: readonly string[],
  origin: EventOrigin = {},
): (request: Request) => Promise<Response> {
  return async (request) => {
    const match = matchRoute(routeKeys, request.method, new URL(request.url).pathname);
    if (!match) return gatewayAnswer('notFound');
    const event = await httpApiEvent(request, match, origin);
    try {
      const result = await (await handler())(event, { awsRequestId: event.requestContext.requestId });
      return httpApiResponse(result, request.method);
    } catch (error) {
      // On AWS the error goes to the function's log and the caller sees only the gateway's 500.
      console.error(`API function failed: ${error instanceof Error ? error.message : String(error)}`);
      return gatewayAnswer('integrationFailed');
    }
  };
}
