import { Hono } from 'hono';
import { handle } from 'hono/aws-lambda';
import { getCookie, setCookie } from 'hono/cookie';
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../infra/functions';
import {
  GATEWAY_ANSWERS,
  type HttpApiHandler,
  httpApiEvent,
  httpApiResponse,
  isTextBody,
  matchRoute,
  viaHttpApiEvent,
} from '../../local/api-gateway-event';

// What TARGET=bundled (and the API Lambda on AWS) receives: the HTTP API's payload format 2.0, built here
// from a request, and served by hono/aws-lambda's own `handle`, as functions/handlers/api.ts serves it.

describe('route selection as the HTTP API does it', () => {
  it.each([
    ['GET', '/v1/health', 'ANY /v1/{proxy+}', { proxy: 'health' }],
    ['POST', '/v1/runs/run_1/tool-calls', 'ANY /v1/{proxy+}', { proxy: 'runs/run_1/tool-calls' }],
    ['POST', '/mcp', 'ANY /mcp', undefined],
    ['GET', '/console', 'ANY /console', undefined],
    ['GET', '/console/runs/run_1', 'ANY /console/{proxy+}', { proxy: 'runs/run_1' }],
  ])('%s %s → %s', (method, path, routeKey, pathParameters) => {
    expect(matchRoute(API_ROUTES, method, path)).toEqual({ routeKey, ...(pathParameters ? { pathParameters } : {}) });
  });

  it.each(['/', '/v1', '/v1/', '/mcp/extra', '/favicon.ico', '/consoles'])('leaves %s unrouted (the gateway answers 404)', (path) => {
    expect(matchRoute(API_ROUTES, 'GET', path)).toBeUndefined();
  });

  it('prefers the most specific route, then a named method, then $default', () => {
    const keys = ['ANY /{proxy+}', 'ANY /v1/{proxy+}', 'GET /v1/health', 'ANY /v1/health', '$default'];
    expect(matchRoute(keys, 'GET', '/v1/health')?.routeKey).toBe('GET /v1/health');
    expect(matchRoute(keys, 'POST', '/v1/health')?.routeKey).toBe('ANY /v1/health');
    expect(matchRoute(keys, 'GET', '/v1/runs')?.routeKey).toBe('ANY /v1/{proxy+}');
    expect(matchRoute(keys, 'GET', '/other')?.routeKey).toBe('ANY /{proxy+}');
    expect(matchRoute(['$default'], 'GET', '/anything')).toEqual({ routeKey: '$default' });
  });
});

describe('the payload-format-2.0 event', () => {
  it('carries the raw path and query, lower-cased headers, cookies apart, repeated parameters comma-joined', async () => {
    const request = new Request('http://127.0.0.1:3000/v1/runs?status=open&status=cancelled&limit=5', {
      headers: { Authorization: 'Bearer k', Cookie: 'a=1; b=2', 'X-Custom': 'x' },
    });
    const event = await httpApiEvent(request, { routeKey: 'ANY /v1/{proxy+}', pathParameters: { proxy: 'runs' } });
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'ANY /v1/{proxy+}',
      rawPath: '/v1/runs',
      rawQueryString: 'status=open&status=cancelled&limit=5',
      cookies: ['a=1', 'b=2'],
      queryStringParameters: { status: 'open,cancelled', limit: '5' },
      pathParameters: { proxy: 'runs' },
      isBase64Encoded: false,
      requestContext: { http: { method: 'GET', path: '/v1/runs', sourceIp: '127.0.0.1' }, routeKey: 'ANY /v1/{proxy+}', stage: '$default' },
    });
    expect(event.headers).toMatchObject({
      authorization: 'Bearer k',
      'x-custom': 'x',
      'x-forwarded-proto': 'http',
      'x-forwarded-port': '3000',
    });
    expect(event.headers.cookie).toBeUndefined();
    expect(Object.keys(event.headers).every((k) => k === k.toLowerCase())).toBe(true);
    expect(event.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
    expect(event.body).toBeUndefined();
  });

  it('passes JSON and text bodies as text, and everything else (form posts included) base64-encoded', async () => {
    const post = (type: string | undefined, body: string) =>
      httpApiEvent(new Request('http://h/v1/x', { method: 'POST', body, headers: type ? { 'content-type': type } : {} }), {
        routeKey: 'ANY /v1/{proxy+}',
      });
    expect(await post('application/json; charset=utf-8', '{"a":1}')).toMatchObject({ body: '{"a":1}', isBase64Encoded: false });
    expect(await post('text/plain', 'hi')).toMatchObject({ body: 'hi', isBase64Encoded: false });
    const form = await post('application/x-www-form-urlencoded', 'decision=approve&sig=s');
    expect(form.isBase64Encoded).toBe(true);
    expect(Buffer.from(form.body!, 'base64').toString()).toBe('decision=approve&sig=s');
    expect(isTextBody(null)).toBe(false);
    expect(isTextBody('application/octet-stream')).toBe(false);
  });
});

describe("hono/aws-lambda's handle serves these events, and the gateway's answers keep its own body", () => {
  const app = new Hono();
  app.post('/console/login', async (c) => {
    const form = await c.req.parseBody();
    setCookie(c, 'session', `for-${form.key}`, { httpOnly: true, sameSite: 'Strict' });
    setCookie(c, 'other', 'x');
    return c.json({ key: form.key, had: getCookie(c, 'prior') ?? null, q: c.req.queries('q') ?? null });
  });
  app.get('/v1/boom', () => {
    throw new Error('boom');
  });
  app.onError((_, c) => c.json({ error: { code: 'internal', message: 'internal error' } }, 500));
  const served = viaHttpApiEvent(async () => handle(app) as HttpApiHandler, API_ROUTES);

  it('round-trips a form post with cookies in and two set-cookie headers out', async () => {
    const response = await served(
      new Request('http://127.0.0.1:3000/console/login?q=1&q=2', {
        method: 'POST',
        body: 'key=abc',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: 'prior=yes' },
      }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ key: 'abc', had: 'yes', q: ['1', '2'] });
    expect(response.headers.getSetCookie()).toEqual([expect.stringMatching(/^session=for-abc; .*HttpOnly/), 'other=x; Path=/']);
  });

  it('answers an unrouted path with the gateway 404, and a thrown error with the app’s own 500', async () => {
    const notFound = await served(new Request('http://127.0.0.1:3000/favicon.ico'));
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toEqual({ message: GATEWAY_ANSWERS.notFound.message });
    // Hono turns a thrown error into its own 500 response; the gateway's 500 is for a function that fails.
    expect((await served(new Request('http://127.0.0.1:3000/v1/boom'))).status).toBe(500);
    const failing = viaHttpApiEvent(async () => () => Promise.reject(new Error('crashed')), API_ROUTES);
    const crashed = await failing(new Request('http://127.0.0.1:3000/v1/health'));
    expect(crashed.status).toBe(500);
    expect(await crashed.json()).toEqual({ message: 'Internal Server Error' });
  });

  it('reads a result without statusCode as a 200 JSON body, and an invalid status as the gateway 500', async () => {
    const plain = httpApiResponse({ ok: true } as never, 'GET');
    expect(plain.status).toBe(200);
    expect(await plain.json()).toEqual({ ok: true });
    expect(httpApiResponse({ statusCode: 42 }, 'GET').status).toBe(500);
    const binary = httpApiResponse({ statusCode: 200, body: Buffer.from('hé').toString('base64'), isBase64Encoded: true }, 'GET');
    expect(await binary.text()).toBe('hé');
  });
});
