import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce } from '../support/target';

/** A principals document that holds only SHA-256 hashes of keys: the keys still work, a leaked hash opens nothing. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => stack?.stop());

describe.runIf(configEditsApplyAtOnce)('keys held as keySha256', () => {
  it('authenticate the API and the console with the key, never with the hash', async () => {
    const key = stack.keys.agent;
    const keySha256 = createHash('sha256').update(key).digest('hex');
    stack.editConfig((c) => {
      const agent = c.principals.find((p) => p.id === 'agent')!;
      delete agent.key;
      agent.keySha256 = keySha256;
    });
    expect((await stack.api.request('POST', '/v1/runs', { key, body: {} })).status).toBe(201);
    expect((await stack.api.request('POST', '/v1/runs', { key: keySha256, body: {} })).status).toBe(401);
    const login = await fetch(`${stack.apiUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiUrl },
      body: new URLSearchParams({ key }),
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
    const runs = await fetch(`${stack.apiUrl}/console/runs`, { headers: { cookie }, redirect: 'manual' });
    expect(runs.status).toBe(200);
    expect(await runs.text()).toContain('agent');
  });
});
