import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENTS, startTestIssuer, type TestIssuer } from '../support/oidc-provider';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce } from '../support/target';

/**
 * The API and /mcp as an OAuth 2.1 resource server beside bearer keys, against a real OpenID provider on
 * loopback (oidc-provider issuing RFC 9068 JWT access tokens through client credentials).
 */
let stack: TestStack;
let idp: TestIssuer;
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  idp = await startTestIssuer();
  stack = await startTestStack();
  stack.editConfig((c) => {
    c.oauth = {
      issuer: idp.issuer,
      principalClaim: 'sub',
      scopeRoles: { 'toolrunner/agent': ['agent'], 'toolrunner/approver': ['approver'] },
      tools: ['get_order', 'charge_card'],
    };
    // A workload mapped to a principal of the document: its roles and tools, no key needed.
    c.principals.push({ id: 'billing-bot', oauthSubject: `${idp.issuer}|${CLIENTS.approver.id}`, roles: ['agent'], tools: ['get_order'] });
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await idp?.stop();
});

const challenge = () => `Bearer resource_metadata="${stack.apiUrl}/.well-known/oauth-protected-resource"`;

describe.runIf(configEditsApplyAtOnce)('OAuth access tokens', () => {
  it('publishes protected-resource metadata for the API and for /mcp (RFC 9728)', async () => {
    for (const [path, resource] of [
      ['', stack.apiUrl],
      ['/mcp', `${stack.apiUrl}/mcp`],
    ]) {
      const res = await fetch(`${stack.apiUrl}/.well-known/oauth-protected-resource${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        resource,
        authorization_servers: [idp.issuer],
        scopes_supported: ['toolrunner/agent', 'toolrunner/approver'],
        bearer_methods_supported: ['header'],
      });
    }
  });

  it('accepts a token from the issuer for this resource, and the trace names its subject', async () => {
    const token = await idp.token('agent', stack.apiUrl);
    const runId = await stack.api.createRun(token);
    const reply = await stack.api.call(token, runId, { callId: 'call_oauth_1', name: 'get_order', arguments: { orderId: 'ord_3' } });
    expect(reply.body).toMatchObject({ status: 'succeeded', result: { id: 'ord_3' } });
    const events = await stack.api.trace(token, runId);
    expect(events.find((e) => e.type === 'operation.proposed')?.detail).toMatchObject({ requestedBy: `oauth:${CLIENTS.agent.id}` });
    // The token's tools only: charge_card is in oauth.tools, send_email is not.
    const refused = await stack.api.call(token, runId, {
      callId: 'call_oauth_2',
      name: 'send_email',
      arguments: { to: 'a@b.c', subject: 's', body: 'b' },
    });
    expect(refused.body).toMatchObject({ status: 'rejected', code: 'forbidden' });
  });

  it('maps a token to the principal whose oauthSubject names it, with that principal’s roles and tools', async () => {
    const token = await idp.token('approver', stack.apiUrl);
    const runId = await stack.api.createRun(token);
    const read = await stack.api.call(token, runId, { callId: 'call_mapped_1', name: 'get_order', arguments: { orderId: 'ord_5' } });
    expect(read.body).toMatchObject({ status: 'succeeded' });
    const events = await stack.api.trace(token, runId);
    expect(events.find((e) => e.type === 'operation.proposed')?.detail).toMatchObject({ requestedBy: 'billing-bot' });
    // billing-bot's own tool list, not the token scope's approver role nor oauth.tools.
    const charge = await stack.api.call(token, runId, {
      callId: 'call_mapped_2',
      name: 'charge_card',
      arguments: { amount: 100, currency: 'USD', customer: 'c' },
    });
    expect(charge.body).toMatchObject({ status: 'rejected', code: 'forbidden' });
  });

  it('refuses forged, expired, HMAC, unsigned, ID and other-audience tokens with 401 and the challenge', async () => {
    const { privateKey: otherKey } = await generateKeyPair('RS256');
    const base = { sub: 'intruder', aud: stack.apiUrl, scope: 'toolrunner/agent', iat: now(), exp: now() + 600 };
    const cases: [string, string][] = [
      ['another audience', await idp.token('agent', 'https://another.example.com')],
      ['expired past the skew', await idp.mint({ ...base, iat: now() - 900, exp: now() - 120 })],
      ['not yet valid', await idp.mint({ ...base, nbf: now() + 300 })],
      ['forged (another key, same kid)', await idp.mint(base, { key: otherKey })],
      ['HMAC-signed', await idp.mint(base, { alg: 'HS256', key: new TextEncoder().encode('x'.repeat(32)) })],
      [
        'unsigned (alg none)',
        `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...base, iss: idp.issuer })).toString('base64url')}.`,
      ],
      ['an ID token', await idp.mint({ ...base, nonce: 'n-1', token_use: 'id' })],
      ['another issuer', await idp.mint({ ...base, iss: 'https://evil.example.com' })],
    ];
    for (const [what, token] of cases) {
      const res = await stack.api.request('POST', '/v1/runs', { key: token, body: {} });
      expect(res.status, what).toBe(401);
      expect(res.headers.get('www-authenticate'), what).toBe(challenge());
    }
    const none = await fetch(`${stack.apiUrl}/v1/runs`, { method: 'POST' });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(challenge());
    const mcp = await fetch(`${stack.apiUrl}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${stack.apiUrl}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('keeps bearer keys working beside tokens', async () => {
    expect((await stack.api.request('POST', '/v1/runs', { key: stack.keys.agent, body: {} })).status).toBe(201);
  });

  it('lets the MCP SDK’s own client, given the server URL and its client credentials, discover the issuer and call a tool', async () => {
    const authProvider = new ClientCredentialsProvider({
      clientId: CLIENTS.agent.id,
      clientSecret: CLIENTS.agent.secret,
      scope: CLIENTS.agent.scope,
      expectedIssuer: idp.issuer,
    });
    const client = new Client({ name: 'oauth-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), { authProvider }));
    try {
      const result = await client.callTool({ name: 'get_order', arguments: { orderId: 'ord_4' } });
      expect(result.isError).toBe(false);
      const envelope = result.structuredContent as { status: string; logical_operation_id: string };
      expect(envelope.status).toBe('succeeded');
      const op = await stack.api.operation(stack.keys.admin, envelope.logical_operation_id);
      const events = await stack.api.trace(stack.keys.admin, op.runId);
      expect(events.find((e) => e.type === 'operation.proposed')?.detail).toMatchObject({ requestedBy: `oauth:${CLIENTS.agent.id}` });
      expect(authProvider.tokens()?.access_token).toBeTruthy();
    } finally {
      await client.close();
    }
  });

  it('signs a person in to the console with a token, for no longer than the token lives', async () => {
    const token = await idp.token('agent', stack.apiUrl);
    const res = await fetch(`${stack.apiUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiUrl },
      body: new URLSearchParams({ key: token }),
    });
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie') ?? '';
    const maxAge = Number(cookie.match(/Max-Age=(\d+)/i)?.[1]);
    expect(maxAge).toBeGreaterThan(0);
    expect(maxAge).toBeLessThanOrEqual(600);
    const page = await fetch(`${stack.apiUrl}/console/runs`, { headers: { cookie: cookie.split(';')[0] }, redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`oauth:${CLIENTS.agent.id}`);
    const forged = await fetch(`${stack.apiUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiUrl },
      body: new URLSearchParams({ key: await idp.mint({ sub: 'x', aud: stack.apiUrl, exp: now() - 300 }) }),
    });
    expect(forged.status).toBe(401);
  });
});
