import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolSpec } from '../../functions/core/tool-spec';
import { makeDemoTools } from '../../functions/tools/demo-tools';
import { createSandbox } from '../../sandbox/server';
import { Sandbox, startTestStack, type TestStack } from '../support/stack';
import { usePolicies } from '../support/policies';

/**
 * Decisions fail closed over HTTP (docs/policies.md): a number the policies cannot compare exactly is refused,
 * never left out of `context.input` (where the forbid reading it erred, was skipped, and the permit won), and a
 * lone surrogate answers `invalid_arguments`, not 500. The user's own charge tool takes any number, as a tool
 * may; its upstream is the sandbox, whose ledger shows what was charged.
 */
let stack: TestStack;
let sandboxServer: Server;
let sandbox: Sandbox;
let sandboxDir: string;
beforeAll(async () => {
  sandboxDir = mkdtempSync(join(tmpdir(), 'toolrunner-sandbox-'));
  sandboxServer = createSandbox(sandboxDir);
  await new Promise<void>((resolve) => sandboxServer.listen(0, '127.0.0.1', resolve));
  const sandboxUrl = `http://127.0.0.1:${(sandboxServer.address() as AddressInfo).port}`;
  sandbox = new Sandbox(sandboxUrl);
  const demo = makeDemoTools(sandboxUrl);
  const charge = demo.find((t) => t.name === 'charge_card')!;
  const anyAmount: ToolSpec = {
    ...charge,
    inputSchema: z.strictObject({ amount: z.number(), currency: z.string(), customer: z.string() }),
    // No cost declared and no approval asked: only the policy stands between the agent and the charge.
    approval: 'never',
    costCents: undefined,
    describeForApproval: undefined,
  };
  stack = await startTestStack({ seed: 42, tools: [...demo.filter((t) => t !== charge), anyAmount] });
});
afterAll(async () => {
  await stack?.stop();
  await new Promise((resolve) => sandboxServer?.close(resolve));
  if (sandboxDir) rmSync(sandboxDir, { recursive: true, force: true });
});
beforeEach(async () => sandbox.reset());

const POLICIES = `
@id("calls") permit(principal, action in Action::"call", resource);
@id("unattended") permit(principal, action in Action::"call_unattended", resource);
@id("charges-up-to-1000")
forbid(principal, action == Action::"charge_card", resource)
when { context.input.amount.greaterThan(decimal("1000.0")) };
`;

describe('decisions fail closed over HTTP', () => {
  it('a 1e15 charge is refused as invalid_arguments and nothing is charged; 9e14 is forbidden by the policy it passes', async () => {
    await usePolicies(stack, POLICIES);
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const huge = { amount: 1e15, currency: 'USD', customer: 'cus_1' };
    const preview = await api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
      key: keys.agent,
      body: { name: 'charge_card', arguments: huge },
    });
    expect(preview.body).toMatchObject({ decision: 'deny', code: 'invalid_arguments' });
    const refused = await api.call(keys.agent, runId, { callId: 'call_huge', name: 'charge_card', arguments: huge });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({
      status: 'rejected',
      code: 'invalid_arguments',
      message:
        'amount: the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)',
    });
    const large = await api.call(keys.agent, runId, {
      callId: 'call_large',
      name: 'charge_card',
      arguments: { ...huge, amount: 9e14 },
    });
    expect(large.body).toMatchObject({
      status: 'rejected',
      code: 'forbidden',
      message: 'this principal may not call charge_card: forbidden by "charges-up-to-1000"',
    });
    // The policy still lets through what it should: the ledger then holds that charge and no other.
    const small = await api.call(keys.agent, runId, { callId: 'call_small', name: 'charge_card', arguments: { ...huge, amount: 999 } });
    expect(small.body).toMatchObject({ status: 'succeeded' });
    const charges = (await sandbox.ledger()).filter((e) => e.kind === 'charge');
    expect(charges.map((e) => (e.body as { amount: number }).amount)).toEqual([999]);
  });

  it('a lone UTF-16 surrogate in a field the policies see answers invalid_arguments, not 500, and sends nothing', async () => {
    await usePolicies(stack, POLICIES);
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, {
      callId: 'call_lone',
      name: 'send_email',
      arguments: { to: 'a@example.com', subject: 'hello \ud800', body: 'there' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      status: 'rejected',
      code: 'invalid_arguments',
      message: 'subject: the policies cannot read this string (it holds a lone UTF-16 surrogate)',
    });
    expect(await sandbox.ledger()).toEqual([]);
  });
});
