import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { shape, startTestStack, type TestStack } from '../support/stack';

/** The loop fuse (`budgets.maxIdenticalCalls`) over HTTP and MCP, counted by conditional writes on DynamoDB Local. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 55 });
});
afterAll(async () => stack?.stop());
beforeEach(async () => stack.sandbox.reset());

const order = (orderId: string) => ({ orderId });

describe('the loop fuse', () => {
  it('refuses the same tool and arguments past maxIdenticalCalls with loop_detected; other arguments and replays go on', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxIdenticalCalls: 2 });
    for (const callId of ['call_a1', 'call_a2'])
      expect((await api.call(keys.agent, runId, { callId, name: 'get_order', arguments: order('ord_1') })).body.status).toBe('succeeded');
    const third = await api.call(keys.agent, runId, { callId: 'call_a3', name: 'get_order', arguments: order('ord_1') });
    expect(third.body).toMatchObject({
      status: 'rejected',
      code: 'loop_detected',
      message: 'the run already made this call with these arguments 2 times (maxIdenticalCalls); change the arguments or stop',
      allowed_next_actions: ['retry_with_new_arguments', 'choose_another_tool', 'stop'],
    });
    expect(shape(await api.trace(keys.agent, runId), third.body.logical_operation_id)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>rejected',
      'result.recorded',
      'rejected>reported',
      'result.reported',
    ]);
    // A replay is the call it was, never a new one; other arguments are another call.
    expect((await api.call(keys.agent, runId, { callId: 'call_a1', name: 'get_order', arguments: order('ord_1') })).body.status).toBe(
      'succeeded',
    );
    expect((await api.call(keys.agent, runId, { callId: 'call_b1', name: 'get_order', arguments: order('ord_2') })).body.status).toBe(
      'succeeded',
    );
    const run = (await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body;
    // The refused call used no budget and left the run open.
    expect(run).toMatchObject({ status: 'open', usage: { toolCalls: 3 }, budgets: { maxIdenticalCalls: 2 } });
  });

  it('holds under concurrent submissions: exactly maxIdenticalCalls of them are admitted', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxIdenticalCalls: 3 });
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.call(keys.agent, runId, { callId: `call_c${i}`, name: 'get_order', arguments: order('ord_9') }),
      ),
    );
    const statuses = replies.map((r) => r.body.code ?? r.body.status).sort();
    expect(statuses).toEqual([...Array(5).fill('loop_detected'), ...Array(3).fill('succeeded')]);
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.usage.toolCalls).toBe(3);
  });

  it('counts the call as frozen: a null for an optional field does not make a repeated charge new, and nothing is charged past the fuse', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxIdenticalCalls: 1 });
    const charge = { amount: 100, currency: 'USD', customer: 'cus_1' };
    const first = await api.call(keys.agent, runId, { callId: 'call_f1', name: 'charge_card', arguments: charge });
    expect(first.body.status).toBe('succeeded');
    // A strict-mode model sends null for the optional description: the frozen arguments are the same.
    const again = await api.call(keys.agent, runId, {
      callId: 'call_f2',
      name: 'charge_card',
      arguments: { ...charge, description: null },
    });
    expect(again.body).toMatchObject({ status: 'rejected', code: 'loop_detected' });
    const preview = await api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
      key: keys.agent,
      body: { name: 'charge_card', arguments: { ...charge, description: null } },
    });
    expect(preview.body).toMatchObject({ decision: 'deny', code: 'loop_detected' });
    expect((await stack.sandbox.ledger()).filter((e) => e.kind === 'charge')).toHaveLength(1);
  });

  it('is on for the runs the MCP server creates: the sixth identical call is refused', async () => {
    const client = new Client({ name: 'loop-fuse-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${stack.keys.agent}` } },
      }),
    );
    try {
      for (let i = 0; i < 5; i++) expect((await client.callTool({ name: 'get_order', arguments: order('ord_3') })).isError).toBeFalsy();
      const sixth = await client.callTool({ name: 'get_order', arguments: order('ord_3') });
      expect(sixth.isError).toBe(true);
      expect(JSON.parse((sixth.content as { text: string }[])[0].text)).toMatchObject({ status: 'rejected', code: 'loop_detected' });
    } finally {
      await client.close();
    }
  });
});
