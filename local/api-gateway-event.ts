import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';

type ProxyHandler = (event: APIGatewayProxyEvent, context: unknown) => Promise<APIGatewayProxyResult>;

/**
 * Serves a fetch-style request with an API Lambda's handler, the way API Gateway's REST proxy integration
 * (`/v1/{proxy+}` on stage `stage`) calls it: a v1 proxy event in, a proxy result out.
 */
export function viaProxyEvent(handler: () => Promise<ProxyHandler>, stage: string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
      multiValueHeaders[key] = [value];
    });
    // API Gateway tells the Lambda the scheme the client used (its event URL always says https).
    headers['x-forwarded-proto'] = url.protocol.slice(0, -1);
    multiValueHeaders['x-forwarded-proto'] = [headers['x-forwarded-proto']];
    const query: Record<string, string[]> = {};
    for (const [key, value] of url.searchParams) {
      query[key] ??= [];
      query[key].push(value);
    }
    const body = request.body ? await request.text() : null;
    const event = {
      resource: '/v1/{proxy+}',
      path: url.pathname,
      httpMethod: request.method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length
        ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v[v.length - 1]]))
        : null,
      multiValueQueryStringParameters: Object.keys(query).length ? query : null,
      pathParameters: { proxy: url.pathname.replace(/^\/v1\//, '') },
      stageVariables: null,
      // The stage has no binary media types, so API Gateway passes bodies as text.
      body,
      isBase64Encoded: false,
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        stage,
        path: `/${stage}${url.pathname}`,
        resourcePath: '/v1/{proxy+}',
        httpMethod: request.method,
        requestId: randomUUID(),
        requestTimeEpoch: Date.now(),
        protocol: 'HTTP/1.1',
        identity: { sourceIp: '127.0.0.1', userAgent: headers['user-agent'] ?? null },
        domainName: url.host,
      },
    } as unknown as APIGatewayProxyEvent;
    const result = await (await handler())(event, { awsRequestId: event.requestContext.requestId });
    const out = new Headers();
    for (const [k, v] of Object.entries(result.headers ?? {})) out.set(k, String(v));
    for (const [k, values] of Object.entries(result.multiValueHeaders ?? {})) for (const v of values) out.append(k, String(v));
    const payload = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
    const bodyless = result.statusCode === 204 || result.statusCode === 304 || request.method === 'HEAD';
    return new Response(bodyless ? null : payload, { status: result.statusCode, headers: out });
  };
}
