import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withinOneMinute } from '../support/one-minute';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { usePolicies as usePoliciesOf } from '../support/policies';

/**
 * The worked policies of docs/policies.md, each through the HTTP API and through MCP, on the embedded stack:
 * the configuration's `policies` decide who may call what and what waits for a person.
 */
let stack: TestStack;
const clients: Client[] = [];
beforeAll(async () => {
  // A call waiting for a person answers MCP as pending soon, instead of after the default 25 s.
  process.env.TOOLRUNNER_MCP_WAIT_MS = '1500';
  stack = await startTestStack({ seed: 33 });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await stack?.stop();
  delete process.env.TOOLRUNNER_MCP_WAIT_MS;
});
beforeEach(async () => stack.sandbox.reset());

const charge = (amount: number, customer = 'cus_1') => ({ amount, currency: 'USD', customer });
let calls = 0;
const callId = () => `call_${++calls}`;

/** Sets the policies (and the agent's attributes) and waits until the runner decides by them. */
async function usePolicies(policies: string, attributes?: Record<string, string[]>): Promise<void> {
  await usePoliciesOf(stack, policies, (config) => {
    const agent = config.principals.find((p) => p.id === 'agent')!;
    if (attributes) agent.attributes = attributes;
    else delete agent.attributes;
  });
}

async function mcp(): Promise<Client> {
  const client = new Client({ name: 'policies-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${stack.keys.agent}` } },
    }),
  );
  clients.push(client);
  return client;
}

const textOf = (result: Awaited<ReturnType<Client['callTool']>>) =>
  (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');
/** The envelope's message, as the model reads it in the tool result. */
const messageOf = (result: Awaited<ReturnType<Client['callTool']>>) => JSON.parse(textOf(result)).message as string;

const SPEND_TIERS = `
@id("reads-and-charges")
permit(principal, action in Action::"call", resource);

@id("charges-unattended-up-to-200")
permit(principal, action == Action::"charge_card:unattended", resource)
when { context.input.amount <= 20000 };

@id("reads-unattended")
permit(principal, action == Action::"get_order:unattended", resource);

@id("never-over-2000")
forbid(principal, action == Action::"charge_card", resource)
when { context.input.amount > 200000 };
`;

describe('worked policy: spend tiers', () => {
  it('over HTTP: up to $200 runs, up to $2,000 waits for a person, more is refused naming the policy', async () => {
    await usePolicies(SPEND_TIERS);
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);

    const small = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(15_000) });
    expect(small.body).toMatchObject({ status: 'succeeded' });

    const middle = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(30_000) }, 0);
    const waiting = await api.until(
      'the middle charge to wait for a person',
      () => api.operation(keys.agent, middle.body.operationId),
      (op) => op.state === 'awaiting_approval',
    );
    expect(waiting.policies).toEqual({ call: ['reads-and-charges'], unattended: [] });
    const approvals = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = approvals.body.approvals.find((a: { operationId: string }) => a.operationId === middle.body.operationId);
    expect(approval.policies).toEqual({ call: ['reads-and-charges'], unattended: [] });
    const page = await fetch(approval.url);
    const html = await page.text();
    expect(html).toContain('No policy lets this call run without a person.');
    expect(html).toContain('<dd id="policies">call permitted by &quot;reads-and-charges&quot;; unattended permitted by no policy</dd>');

    const big = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(250_000) });
    expect(big.body).toMatchObject({
      status: 'rejected',
      code: 'forbidden',
      message: 'this principal may not call charge_card: forbidden by "never-over-2000"',
    });
    const trace = await api.trace(keys.agent, runId);
    expect(shape(trace, big.body.logical_operation_id)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>rejected',
      'result.recorded',
      'rejected>reported',
      'result.reported',
    ]);
    expect(trace.find((e) => e.operationId === big.body.logical_operation_id && e.type === 'policy.decision')?.detail).toEqual({
      decision: 'deny',
      code: 'forbidden',
      policies: { call: ['never-over-2000'] },
    });
    // One charge reached the upstream: the one under the unattended limit.
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.amount)).toEqual([15_000]);
  });

  it('over MCP: the same three answers', async () => {
    await usePolicies(SPEND_TIERS);
    const client = await mcp();
    const small = await client.callTool({ name: 'charge_card', arguments: charge(15_000) });
    expect(small.isError).toBeFalsy();
    const big = await client.callTool({ name: 'charge_card', arguments: charge(250_000) });
    expect(big.isError).toBe(true);
    expect(messageOf(big)).toBe('this principal may not call charge_card: forbidden by "never-over-2000"');
    const middle = await client.callTool({ name: 'charge_card', arguments: charge(30_000) });
    expect(middle.isError).toBeFalsy();
    expect(textOf(middle)).toMatch(/approv/i);
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.amount)).toEqual([15_000]);
  });
});

/** Business hours, written around the hour the test runs in so that both sides of the rule are seen now. */
function businessHours(open: boolean): string {
  const hour = new Date().getUTCHours();
  // Two hours, so that an hour turning during the test changes nothing.
  const hours = `context.now.hour == ${hour} || context.now.hour == ${(hour + 1) % 24}`;
  return `
@id("calls")
permit(principal, action in Action::"call", resource);

@id("unattended")
permit(principal, action in Action::"call_unattended", resource);

@id("no-charges-outside-business-hours")
forbid(principal, action == Action::"charge_card", resource)
when { ${open ? `!(${hours})` : hours} };
`;
}

describe('worked policy: business hours', () => {
  it('over HTTP: a charge outside the hours is refused, inside them it runs', async () => {
    const { api, keys } = stack;
    await usePolicies(businessHours(false));
    const runId = await api.createRun(keys.agent);
    const closed = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(100) });
    expect(closed.body).toMatchObject({
      status: 'rejected',
      code: 'forbidden',
      message: 'this principal may not call charge_card: forbidden by "no-charges-outside-business-hours"',
    });
    // Reads are not charges: the rule names one action.
    expect((await api.call(keys.agent, runId, { callId: callId(), name: 'get_order', arguments: { orderId: 'ord_1' } })).body.status).toBe(
      'succeeded',
    );
    await usePolicies(businessHours(true));
    expect((await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(100) })).body.status).toBe(
      'succeeded',
    );
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge')).toHaveLength(1);
  });

  it('over MCP', async () => {
    await usePolicies(businessHours(false));
    const client = await mcp();
    const closed = await client.callTool({ name: 'charge_card', arguments: charge(100) });
    expect(closed.isError).toBe(true);
    expect(messageOf(closed)).toBe('this principal may not call charge_card: forbidden by "no-charges-outside-business-hours"');
    await usePolicies(businessHours(true));
    expect((await client.callTool({ name: 'charge_card', arguments: charge(101) })).isError).toBeFalsy();
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.amount)).toEqual([101]);
  });
});

const PER_CUSTOMER = `
@id("reads")
permit(principal, action == Action::"get_order", resource);

@id("charge-own-customers")
permit(principal, action == Action::"charge_card", resource)
when { principal has customers && principal.customers.contains(context.input.customer) };

@id("unattended")
permit(principal, action in Action::"call_unattended", resource);
`;

describe('worked policy: per-customer scoping', () => {
  it("over HTTP: an agent charges only the customers in its principal's attributes", async () => {
    const { api, keys } = stack;
    await usePolicies(PER_CUSTOMER, { customers: ['cus_1', 'cus_7'] });
    const runId = await api.createRun(keys.agent);
    expect(
      (await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(100, 'cus_7') })).body.status,
    ).toBe('succeeded');
    const foreign = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(100, 'cus_2') });
    expect(foreign.body).toMatchObject({
      status: 'rejected',
      code: 'forbidden',
      message: 'this principal may not call charge_card: no policy permits it',
    });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.customer)).toEqual(['cus_7']);
  });

  it('over MCP', async () => {
    await usePolicies(PER_CUSTOMER, { customers: ['cus_1'] });
    const client = await mcp();
    expect((await client.callTool({ name: 'charge_card', arguments: charge(100, 'cus_1') })).isError).toBeFalsy();
    const foreign = await client.callTool({ name: 'charge_card', arguments: charge(100, 'cus_2') });
    expect(foreign.isError).toBe(true);
    expect(messageOf(foreign)).toBe('this principal may not call charge_card: no policy permits it');
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.customer)).toEqual(['cus_1']);
  });
});

const SHADOW = `
@id("everything")
permit(principal, action, resource);

@id("candidate-no-external-email")
@mode("log_only")
forbid(principal, action == Action::"send_email", resource)
when { !(context.input.to like "*@example.com") };
`;

describe('worked policy: shadow rollout', () => {
  it('over HTTP: a log-only policy decides nothing, and the trace says what it would have decided', async () => {
    const { api, keys } = stack;
    await usePolicies(SHADOW);
    const runId = await api.createRun(keys.agent);
    const email = { to: 'someone@elsewhere.test', subject: 'Hello', body: 'Hi' };
    const sent = await api.call(keys.agent, runId, { callId: callId(), name: 'send_email', arguments: email });
    expect(sent.body.status).toBe('succeeded');
    const trace = await api.trace(keys.agent, runId);
    expect(shape(trace, sent.body.logical_operation_id).slice(0, 3)).toEqual(['operation.proposed', 'policy.decision', 'policy.shadow']);
    expect(trace.find((e) => e.type === 'policy.shadow')?.detail).toEqual({
      decision: 'deny',
      enforced: 'allow',
      policies: ['candidate-no-external-email'],
    });
    // An internal address: the candidate would not have decided otherwise, and takes no part.
    const internal = await api.call(keys.agent, runId, {
      callId: callId(),
      name: 'send_email',
      arguments: { ...email, to: 'a@example.com' },
    });
    expect(shape(await api.trace(keys.agent, runId), internal.body.logical_operation_id)).not.toContain('policy.shadow');
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'email')).toHaveLength(2);
  });

  it('over MCP', async () => {
    await usePolicies(SHADOW);
    const client = await mcp();
    const sent = await client.callTool({ name: 'send_email', arguments: { to: 'x@elsewhere.test', subject: 'S', body: 'B' } });
    expect(sent.isError).toBeFalsy();
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'email')).toHaveLength(1);
  });
});

describe('worked policy: a rate limit (configuration beside the policies)', () => {
  it('over HTTP and over MCP: at most N emails a minute for each agent; the next answers throttled with when to retry', async () => {
    stack.editConfig((config) => {
      delete config.policies;
      config.rateLimits = [{ tool: 'send_email', principal: '*', perMinute: 2 }];
    });
    const { api, keys } = stack;
    const email = (n: number) => ({ to: `r${n}@example.com`, subject: 'Hi', body: 'There' });
    const seen = await withinOneMinute(async (attempt) => {
      const runId = await api.createRun(keys.agent);
      // The limit applies once the runner has read the edited configuration: wait until a call is throttled.
      const sent = [];
      for (let n = 0; n < 2; n++)
        sent.push(await api.call(keys.agent, runId, { callId: `rl_${attempt}_${n}`, name: 'send_email', arguments: email(n) }));
      const over = await api.call(keys.agent, runId, { callId: `rl_${attempt}_2`, name: 'send_email', arguments: email(2) });
      const client = await mcp();
      const overMcp = await client.callTool({ name: 'send_email', arguments: email(3) });
      return { sent, over, overMcp };
    });
    expect(seen.sent.map((r) => r.body.status)).toEqual(['succeeded', 'succeeded']);
    expect(seen.over.status).toBe(429);
    expect(seen.over.body.error.code).toBe('throttled');
    expect(Number(seen.over.headers.get('retry-after'))).toBeGreaterThan(0);
    // The MCP session's calls are the same principal's: its third email of the minute is refused as a tool error.
    expect(seen.overMcp.isError).toBe(true);
    expect(textOf(seen.overMcp)).toMatch(/throttled/i);
    stack.editConfig((config) => {
      delete config.rateLimits;
    });
  });
});

describe('policies at load', () => {
  it('a policy that does not validate is refused with its line; the last valid policies keep deciding', async () => {
    const { api, keys } = stack;
    await usePolicies(SPEND_TIERS);
    stack.editConfig((config) => {
      config.policies = `@id("broken")\npermit(principal, action == Action::"charge_card", resource)\nwhen { context.input.amout > 1 };`;
    });
    const runId = await api.createRun(keys.agent);
    // Still the spend tiers: over $2,000 is refused by them.
    const big = await api.call(keys.agent, runId, { callId: callId(), name: 'charge_card', arguments: charge(250_000) });
    expect(big.body.message).toContain('never-over-2000');
  });
});
