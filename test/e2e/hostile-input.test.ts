import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type Reply, type TestStack } from '../support/stack';

let stack: TestStack;
let runId: string;

beforeAll(async () => {
  stack = await startTestStack();
  runId = await stack.api.createRun(stack.keys.agent, { maxToolCalls: 1000, maxTurns: 1000, maxSpendCents: 100_000_000 });
});
afterAll(async () => {
  await stack?.stop();
});

function expectInvalid(res: Reply, what: RegExp = /./): void {
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(400);
  expect(res.body.error.code).toBe('invalid_request');
  expect(res.body.error.message).toMatch(what);
}

const toolCall = (callId: string, argsText: string) => `{"callId":"${callId}","turn":1,"name":"get_order","arguments":${argsText}}`;
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const long = (prefix: string) => `${prefix}${'A'.repeat(3000)}`;

describe('hostile input gets a clear answer, never a 500', () => {
  it.each(['1e20', '9007199254740993', '1e309', '5e-324'])(
    'the number %s in arguments (object or JSON string) and in metadata is 400',
    async (n) => {
      const { api, keys } = stack;
      const path = `/v1/runs/${runId}/tool-calls`;
      expectInvalid(
        await api.request('POST', path, {
          key: keys.agent,
          raw: toolCall(`call_n${n}`, `{"orderId":"ord_1","n":${n}}`),
          headers: { prefer: 'wait=0' },
        }),
        /arguments\.n: the number/,
      );
      expectInvalid(
        await api.request('POST', path, {
          key: keys.agent,
          raw: toolCall(`call_s${n}`, JSON.stringify(`{"orderId":"ord_1","n":${n}}`)),
          headers: { prefer: 'wait=0' },
        }),
        /arguments\.n: the number/,
      );
      expectInvalid(await api.request('POST', '/v1/runs', { key: keys.agent, raw: `{"metadata":{"n":${n}}}` }), /metadata\.n: the number/);
    },
  );

  it.each([
    ['empty', ''],
    ['constructor', 'constructor'],
    ['__proto__', '__proto__'],
    ['prototype', 'prototype'],
  ])('the %s key in arguments and metadata is 400', async (_name, key) => {
    const { api, keys } = stack;
    const obj = `{"orderId":"ord_1","x":{${JSON.stringify(key)}:1}}`;
    expectInvalid(
      await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
        key: keys.agent,
        raw: toolCall(`call_k${key}`, obj),
        headers: { prefer: 'wait=0' },
      }),
      /is not allowed/,
    );
    expectInvalid(
      await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
        key: keys.agent,
        raw: toolCall(`call_ks${key}`, JSON.stringify(obj)),
        headers: { prefer: 'wait=0' },
      }),
      /is not allowed/,
    );
    expectInvalid(
      await api.request('POST', '/v1/runs', { key: keys.agent, raw: `{"metadata":{${JSON.stringify(key)}:1}}` }),
      /is not allowed/,
    );
  });

  it.each([33, 10_000])('nesting %i deep in arguments (object or string) and metadata is 400', async (depth) => {
    const { api, keys } = stack;
    expectInvalid(
      await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
        key: keys.agent,
        raw: toolCall(`call_d${depth}`, nested(depth)),
        headers: { prefer: 'wait=0' },
      }),
      /nested deeper/,
    );
    expectInvalid(
      await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
        key: keys.agent,
        raw: toolCall(`call_ds${depth}`, JSON.stringify(nested(depth))),
        headers: { prefer: 'wait=0' },
      }),
      /nested deeper/,
    );
    expectInvalid(await api.request('POST', '/v1/runs', { key: keys.agent, raw: `{"metadata":${nested(depth)}}` }), /nested deeper/);
    // Just inside the bound still works, end to end through DynamoDB.
    expect((await api.request('POST', '/v1/runs', { key: keys.agent, raw: `{"metadata":${nested(30)}}` })).status).toBe(201);
  });

  it('arguments right at the bound (32 levels with the body) reach the store and end as an envelope; one level more is 400', async () => {
    const { api, keys } = stack;
    const path = `/v1/runs/${runId}/tool-calls`;
    const atBound = await api.request('POST', path, {
      key: keys.agent,
      raw: toolCall('call_at_bound', nested(31)),
      headers: { prefer: 'wait=25' },
    });
    expect(atBound.status).toBe(200);
    expect(atBound.body).toMatchObject({ status: 'rejected', code: 'invalid_arguments' });
    expectInvalid(
      await api.request('POST', path, { key: keys.agent, raw: toolCall('call_over_bound', nested(32)), headers: { prefer: 'wait=0' } }),
      /nested deeper than 32 levels/,
    );
  });

  it('__proto__ in arguments can no longer make three different payloads replay one another', async () => {
    const { api, keys } = stack;
    for (const amount of [1, 2, 3]) {
      const res = await api.request('POST', `/v1/runs/${runId}/tool-calls`, {
        key: keys.agent,
        raw: `{"callId":"call_proto","turn":1,"name":"charge_card","arguments":{"amount":100,"currency":"EUR","customer":"c","__proto__":{"amount":${amount}}}}`,
        headers: { prefer: 'wait=0' },
      });
      expectInvalid(res, /"__proto__" is not allowed/);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(await stack.sandbox.ledger()).toHaveLength(0);
  });

  it('ids over 2048 bytes in paths are 404, on authenticated routes and on the unauthenticated approval routes', async () => {
    const { api, keys } = stack;
    for (const [method, path] of [
      ['GET', `/v1/runs/${long('run_')}`],
      ['POST', `/v1/runs/${long('run_')}/cancel`],
      ['POST', `/v1/runs/${long('run_')}/tool-calls`],
      ['GET', `/v1/runs/${long('run_')}/trace`],
      ['GET', `/v1/operations/${long('op_')}`],
      ['POST', `/v1/operations/${long('op_')}/cancel`],
    ] as const) {
      const body = path.endsWith('/tool-calls')
        ? { callId: 'call_long', turn: 1, name: 'get_order', arguments: {} }
        : method === 'POST'
          ? {}
          : undefined;
      const res = await api.request(method, path, { key: keys.admin, body });
      expect(res.status, `${method} ${path.slice(0, 30)}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const resolved = await api.request('POST', `/v1/operations/${long('op_')}/resolve`, {
      key: keys.reviewer,
      body: { outcome: 'failed', note: 'x' },
    });
    expect(resolved.status).toBe(404);
    const page = await api.request('GET', `/v1/approvals/${long('apr_')}?sig=x.y`);
    expect(page.status).toBe(404);
    const decided = await api.request('POST', `/v1/approvals/${long('apr_')}`, { body: { decision: 'approve', sig: 'x.y' } });
    expect(decided.status).toBe(404);
    expect(decided.body.error.code).toBe('not_found');
  });

  it('approval signatures whose payload is null, or with garbage appended, are 403 (unauthenticated)', async () => {
    const { api, keys } = stack;
    const submitted = await api.call(
      keys.agent,
      runId,
      { callId: 'call_sig', name: 'charge_card', arguments: { amount: 60_000, currency: 'EUR', customer: 'cus_sig' } },
      25,
    );
    expect(submitted.body.state).toBe('awaiting_approval');
    const list = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = list.body.approvals.find((a: { operationId: string }) => a.operationId === submitted.body.operationId);
    const url = new URL(approval.url);
    const sig = url.searchParams.get('sig')!;
    const path = url.pathname;
    const nullPayload = `${Buffer.from('null').toString('base64url')}.${sig.split('.')[1]}`;
    for (const bad of [nullPayload, `${sig}.garbage`, `${Buffer.from('[]').toString('base64url')}.${sig.split('.')[1]}`]) {
      const page = await api.request('GET', `${path}?sig=${encodeURIComponent(bad)}`);
      expect(page.status).toBe(403);
      const post = await api.request('POST', path, { body: { decision: 'approve', sig: bad } });
      expect(post.status).toBe(403);
      expect(post.body.error.code).toBe('forbidden');
    }
    // The real link still works, and nothing was decided by the bad ones.
    expect((await api.request('GET', `${path}?sig=${encodeURIComponent(sig)}`)).status).toBe(200);
    expect((await api.operation(keys.agent, submitted.body.operationId)).approval.state).toBe('pending');
  });

  it('the approval page sends a content security policy, refuses framing and referrers, and shows a right-to-left override', async () => {
    const { api, keys } = stack;
    const submitted = await api.call(
      keys.agent,
      runId,
      { callId: 'call_rlo', name: 'charge_card', arguments: { amount: 75_000, currency: 'USD', customer: 'cus_\u202Egpj.exe' } },
      25,
    );
    const list = await api.request('GET', '/v1/approvals?status=pending&limit=100', { key: keys.approver });
    const approval = list.body.approvals.find((a: { operationId: string }) => a.operationId === submitted.body.operationId);
    const page = await fetch(approval.url);
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(html).not.toContain('\u202E');
    expect(html).toContain('&lt;U+202E&gt;');
    expect(html).toContain('$750.00');
  });

  it('a config file caught mid-write keeps the last valid configuration serving', async () => {
    const { api, keys, configPath } = stack;
    const valid = readFileSync(configPath, 'utf8');
    writeFileSync(configPath, valid.slice(0, 40));
    try {
      for (let i = 0; i < 5; i++) expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).status).toBe(200);
    } finally {
      writeFileSync(configPath, valid);
    }
  });
});
