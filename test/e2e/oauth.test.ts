import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateKeyPair } from 'jose';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENTS, startTestIssuer, type TestIssuer } from '../support/oidc-provider';
import { startTestStack, type TestStack } from '../support/stack';
import { usePolicies } from '../support/policies';
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
/** The challenge of a 401 that refused a presented token (RFC 6750 section 3.1): the client must not send it again. */
const invalidToken = (path = '') =>
  `Bearer error="invalid_token", resource_metadata="${stack.apiUrl}/.well-known/oauth-protected-resource${path}"`;

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
      expect(res.headers.get('www-authenticate'), what).toBe(invalidToken());
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

/** A token the test issuer signs for this API, naming `sub` with `scope`, valid for ten minutes. */
const tokenFor = (sub: string, scope: string, extra: Record<string, unknown> = {}) =>
  idp.mint({ sub, aud: stack.apiUrl, scope, iat: now(), exp: now() + 600, ...extra });

describe.runIf(configEditsApplyAtOnce)('one principal for every decision, whatever the credential', () => {
  it('a token mapped by oauthSubject carries its principal’s attributes: a forbid on them stops the token as it stops the key', async () => {
    const key = `tr_suspended_${'k'.repeat(20)}`;
    await usePolicies(
      stack,
      `@id("calls")
permit(principal, action in Action::"call", resource);
@id("unattended")
permit(principal, action in Action::"call_unattended", resource);
@id("suspended")
forbid(principal, action == Action::"charge_card", resource) when { principal has tier && principal.tier == "suspended" };`,
      (c) =>
        c.principals.push({
          id: 'suspended-bot',
          key,
          oauthSubject: `${idp.issuer}|suspended-sub`,
          roles: ['agent'],
          tools: ['charge_card'],
          attributes: { tier: 'suspended' },
        }),
    );
    try {
      await stack.sandbox.reset();
      const token = await tokenFor('suspended-sub', 'toolrunner/agent');
      const forbidden = 'this principal may not call charge_card: forbidden by "suspended"';
      for (const [door, credential] of [
        ['key', key],
        ['token', token],
      ] as const) {
        const runId = await stack.api.createRun(credential);
        const preview = await stack.api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
          key: credential,
          body: { name: 'charge_card', arguments: { amount: 1_000, currency: 'USD', customer: 'cus_1' } },
        });
        expect(preview.body, door).toMatchObject({ decision: 'deny', code: 'forbidden', message: forbidden });
        const reply = await stack.api.call(credential, runId, {
          callId: `call_suspended_${door}`,
          name: 'charge_card',
          arguments: { amount: 1_000, currency: 'USD', customer: 'cus_1' },
        });
        expect(reply.body, door).toMatchObject({ status: 'rejected', code: 'forbidden', message: forbidden });
        const events = await stack.api.trace(credential, runId);
        expect(events.find((e) => e.type === 'operation.proposed')?.detail, door).toMatchObject({ requestedBy: 'suspended-bot' });
      }
      expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge')).toEqual([]);
    } finally {
      await usePolicies(stack, undefined, (c) => {
        c.principals = c.principals.filter((p) => p.id !== 'suspended-bot');
      });
    }
  });

  it('an oauth:<sub> principal’s call that needs a person: the preview agrees, a token approver’s link decides, the approved call runs', async () => {
    await stack.sandbox.reset();
    const agent = await tokenFor('token-agent', 'toolrunner/agent');
    const approver = await tokenFor('token-approver', 'toolrunner/approver');
    const runId = await stack.api.createRun(agent, { maxSpendCents: 1_000_000 });
    const charge = { amount: 60_000, currency: 'USD', customer: 'cus_token' };
    const preview = await stack.api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
      key: agent,
      body: { name: 'charge_card', arguments: charge },
    });
    expect(preview.body).toMatchObject({ decision: 'require_approval' });
    const submitted = await stack.api.call(agent, runId, { callId: 'call_token_approved', name: 'charge_card', arguments: charge }, 0);
    const operationId = submitted.body.operationId as string;
    await stack.api.until(
      'the charge to wait for a person',
      () => stack.api.operation(agent, operationId),
      (op) => op.state === 'awaiting_approval',
    );

    // The token approver's own signed link, as GET /v1/approvals lists it for that token.
    const listed = await stack.api.request('GET', '/v1/approvals?status=pending', { key: approver });
    expect(listed.status).toBe(200);
    const url = (listed.body.approvals as { operationId: string; url: string }[]).find((a) => a.operationId === operationId)!.url;
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<dt>You are<\/dt><dd>oauth:token-approver<\/dd>/);
    const sig = new URL(url).searchParams.get('sig');
    const decided = await stack.api.request('POST', new URL(url).pathname, { body: { decision: 'approve', sig } });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ operationId, state: 'approved' });

    const done = await stack.api.until(
      'the approved charge to settle',
      () => stack.api.operation(agent, operationId),
      (op) => op.state === 'reported',
    );
    expect(done.envelope).toMatchObject({ status: 'succeeded' });
    expect(done.approval).toMatchObject({ state: 'approved', decidedBy: 'oauth:token-approver' });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.amount)).toEqual([60_000]);
  });

  it('an oauth:<sub> principal’s retry and its non-replay-safe tool run (both are re-checked before their attempt)', async () => {
    stack.editConfig((c) => {
      c.oauth!.tools = ['get_order', 'charge_card', 'send_email'];
    });
    try {
      await stack.sandbox.reset();
      const agent = await tokenFor('token-agent', 'toolrunner/agent');
      const runId = await stack.api.createRun(agent);
      await stack.sandbox.fault({ route: 'GET /v1/orders/{id}', mode: 'fail_503', count: 1 });
      const read = await stack.api.call(agent, runId, { callId: 'call_token_retry', name: 'get_order', arguments: { orderId: 'ord_7' } });
      expect(read.body).toMatchObject({ status: 'succeeded', result: { id: 'ord_7' } });
      expect((await stack.api.operation(agent, read.body.logical_operation_id)).attempts).toBe(2);
      const email = await stack.api.call(agent, runId, {
        callId: 'call_token_email',
        name: 'send_email',
        arguments: { to: 'a@example.com', subject: 's', body: 'b' },
      });
      expect(email.body).toMatchObject({ status: 'succeeded' });
      expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'email')).toHaveLength(1);
    } finally {
      stack.editConfig((c) => {
        c.oauth!.tools = ['get_order', 'charge_card'];
      });
    }
  });
});

describe.runIf(configEditsApplyAtOnce)('the token checks', () => {
  it('refuses typ JWT, an aud that is not strings, an infinite exp; accepts at+jwt and no typ', async () => {
    const base = { iss: idp.issuer, sub: 'checks', aud: stack.apiUrl, scope: 'toolrunner/agent', iat: now(), exp: now() + 600 };
    const refused: [string, string][] = [
      ['typ JWT', await idp.mint(base, { typ: 'JWT' })],
      ['a nested aud', await idp.mint({ ...base, aud: [[stack.apiUrl]] as unknown as string[] })],
      ['an object aud', await idp.mint({ ...base, aud: { 0: stack.apiUrl } as unknown as string })],
      ['exp 1e400', await idp.mint(base, { payloadText: JSON.stringify(base).replace(/"exp":\d+/, '"exp":1e400') })],
    ];
    for (const [what, token] of refused) {
      const res = await stack.api.request('POST', '/v1/runs', { key: token, body: {} });
      expect(res.status, what).toBe(401);
      expect(res.headers.get('www-authenticate'), what).toBe(invalidToken());
    }
    for (const [what, token] of [
      ['typ at+jwt', await idp.mint(base)],
      ['no typ', await idp.mint(base, { typ: null })],
    ] as const)
      expect((await stack.api.request('POST', '/v1/runs', { key: token, body: {} })).status, what).toBe(201);
    // /mcp answers a refused token the same way; no token at all keeps the plain challenge.
    const mcp = await fetch(`${stack.apiUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${refused[0][1]}` },
      body: '{}',
    });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toBe(invalidToken('/mcp'));
    const none = await fetch(`${stack.apiUrl}/v1/runs`, { method: 'POST' });
    expect(none.headers.get('www-authenticate')).toBe(challenge());
  });

  it('checks the audience also when clientIds is set: a token for another API naming a listed client is refused', async () => {
    stack.editConfig((c) => {
      c.oauth!.clientIds = ['agent-bot'];
    });
    try {
      const other = await idp.token('agent', 'https://another.example.com');
      const res = await stack.api.request('POST', '/v1/runs', { key: other, body: {} });
      expect(res.status).toBe(401);
      // A token for this API still passes.
      expect((await stack.api.request('POST', '/v1/runs', { key: await idp.token('agent', stack.apiUrl), body: {} })).status).toBe(201);
    } finally {
      stack.editConfig((c) => {
        delete c.oauth!.clientIds;
      });
    }
  });

  it('names oauth.audience as the resource of its metadata when one is set', async () => {
    stack.editConfig((c) => {
      c.oauth!.audience = 'api://toolrunner-test';
    });
    try {
      for (const path of ['', '/mcp']) {
        const res = await fetch(`${stack.apiUrl}/.well-known/oauth-protected-resource${path}`);
        expect(((await res.json()) as { resource: string }).resource, path).toBe('api://toolrunner-test');
      }
    } finally {
      stack.editConfig((c) => {
        delete c.oauth!.audience;
      });
    }
  });

  it('fetches a failing issuer at most once per cooldown, refusing tokens meanwhile without fetching', async () => {
    const hits: string[] = [];
    const failing: Server = createServer((req, res) => {
      hits.push(req.url ?? '');
      // Under /jwks-case, discovery answers and names a JWKS that fails; everything else fails.
      if (req.url === '/jwks-case/.well-known/openid-configuration') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ issuer: `${failingUrl}/jwks-case`, jwks_uri: `${failingUrl}/jwks` }));
        return;
      }
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => failing.listen(0, '127.0.0.1', () => r()));
    const failingUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
    const original = idp.issuer;
    try {
      for (const [what, issuer, expected] of [
        ['a failing discovery', failingUrl, ['/.well-known/openid-configuration']],
        ['a failing JWKS', `${failingUrl}/jwks-case`, ['/jwks-case/.well-known/openid-configuration', '/jwks']],
      ] as const) {
        hits.length = 0;
        stack.editConfig((c) => {
          c.oauth!.issuer = issuer;
        });
        const token = await idp.mint({ iss: issuer, sub: 'x', aud: stack.apiUrl, exp: now() + 600 });
        // One after another: each would fetch again if a failure were not remembered.
        const answers: string[] = [];
        for (let i = 0; i < 60; i++) {
          const res = await stack.api.request('POST', '/v1/runs', { key: token, body: {} });
          answers.push(`${res.status} ${res.headers.get('www-authenticate')}`);
        }
        expect(hits, what).toEqual(expected);
        expect(new Set(answers), what).toEqual(new Set([`401 ${invalidToken()}`]));
      }
    } finally {
      stack.editConfig((c) => {
        c.oauth!.issuer = original;
      });
      failing.closeAllConnections();
      await new Promise((r) => failing.close(r));
    }
  });
});
