import { Agent, setTracingDisabled, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../support/adapter-cases';
import { approvalCaseSuite } from '../support/approval-case-suite';
import { resumeInNewProcess } from '../support/resume-process';
import { toolrunnerAgents } from '../../functions/agents/openai-agents';
import { createClient, operationIdFor } from '../../functions/client';
import { startApprover } from '../support/approver';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  setTracingDisabled(true);
  stack = await startTestStack({ seed: 3 });
});
afterAll(async () => stack?.stop());

type Call = { callId: string; name: string; arguments: unknown };

/** The SDK's own Model interface, answering from a script: one list of tool calls per turn, then a message. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  private turn = 0;
  constructor(private readonly turns: Call[][]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const calls = this.turns[this.turn++];
    const output = calls
      ? calls.map((c) => ({
          type: 'function_call' as const,
          callId: c.callId,
          name: c.name,
          arguments: JSON.stringify(c.arguments),
          status: 'completed' as const,
        }))
      : [
          {
            type: 'message' as const,
            role: 'assistant' as const,
            status: 'completed' as const,
            content: [{ type: 'output_text' as const, text: 'done' }],
          },
        ];
    return { usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }), output, responseId: `resp_${this.turn}` };
  }

  getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used');
  }

  /** What the model read back after each turn: the tool results at the end of the next request's input. */
  resultsOfTurn(turn: number): { callId: string; output: any }[] {
    const input = this.requests[turn + 1]?.input;
    if (!input || typeof input === 'string') return [];
    const results = input.filter((i: any) => i.type === 'function_call_result');
    return results
      .slice(-this.turns[turn].length)
      .map((i: any) => ({ callId: i.callId, output: JSON.parse(typeof i.output === 'string' ? i.output : i.output.text) }));
  }
}

describe('OpenAI Agents SDK adapter', () => {
  it('runs reads, writes and approvals through the runner', async () => {
    const address = { line1: '2 Side St', city: 'Shelbyville', postalCode: '54321', country: 'US' };
    const model = new ScriptedModel([
      [
        { callId: 'call_read', name: 'get_order', arguments: { orderId: 'ord_5' } },
        { callId: 'call_write', name: 'update_shipping_address', arguments: { orderId: 'ord_5', address } },
      ],
      // Strict mode: the optional description arrives as null.
      [{ callId: 'call_big', name: 'charge_card', arguments: { amount: 60_000, currency: 'USD', customer: 'cus_a', description: null } }],
      [{ callId: 'call_no', name: 'charge_card', arguments: { amount: 90_000, currency: 'USD', customer: 'cus_a', description: null } }],
    ]);
    const runner = await toolrunnerAgents({
      baseUrl: stack.apiUrl,
      key: stack.keys.agent,
      pollMs: 100,
      budgets: { maxSpendCents: 1_000_000 },
    });
    const approver = startApprover(
      stack,
      () => runner.runId,
      (a) => (a.arguments.amount === 60_000 ? 'approve' : 'reject'),
    );
    try {
      const agent = new Agent({ name: 'support', instructions: 'Help the customer.', model, tools: runner.tools });
      const result = await runner.run(agent, 'Fix order ord_5 and charge the customer.');
      expect(result.finalOutput).toBe('done');
    } finally {
      await approver.stop();
    }
    expect(approver.decided.map((d) => [d.arguments.amount, d.decision])).toEqual([
      [60_000, 'approve'],
      [90_000, 'reject'],
    ]);

    const first = model.resultsOfTurn(0);
    const [read, write] = ['call_read', 'call_write'].map((id) => first.find((r) => r.callId === id)!);
    const [[big], [no]] = [1, 2].map((turn) => model.resultsOfTurn(turn));
    expect(read).toMatchObject({ callId: 'call_read', output: { status: 'succeeded', result: { id: 'ord_5' } } });
    expect(write).toMatchObject({ callId: 'call_write', output: { status: 'succeeded', result: { shippingAddress: address } } });
    expect(big).toMatchObject({ callId: 'call_big', output: { status: 'succeeded', result: { amount: 60_000 } } });
    expect(no).toMatchObject({ callId: 'call_no', output: { status: 'rejected', code: 'approval_rejected' } });

    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge');
    expect(charges.map((c) => c.body.amount)).toEqual([60_000]);
    const events = await stack.api.trace(stack.keys.agent, runner.runId);
    expect(
      events
        .filter((e) => e.type === 'operation.proposed')
        .map((e) => e.callId)
        .sort(),
    ).toEqual(['call_big', 'call_no', 'call_read', 'call_write']);
  });

  it('tells the model "pending" with the operation id when the wait ends before the approver, never a rejection', async () => {
    const model = new ScriptedModel([
      [{ callId: 'call_slow', name: 'charge_card', arguments: { amount: 66_000, currency: 'EUR', customer: 'cus_slow_agents' } }],
    ]);
    const runner = await toolrunnerAgents({ baseUrl: stack.apiUrl, key: stack.keys.agent, pollMs: 50, approvalTimeoutMs: 300 });
    const agent = new Agent({ name: 'support', instructions: 'Help the customer.', model, tools: runner.tools });
    const result = await runner.run(agent, 'Charge cus_slow_agents.');
    expect(result.finalOutput).toBe('done');
    const operationId = operationIdFor(runner.runId, 'call_slow');
    const [[read]] = [model.resultsOfTurn(0)];
    expect(read.output).toMatchObject({ status: 'pending', operationId, state: 'awaiting_approval' });
    expect(JSON.stringify(read.output)).not.toMatch(/rejected|denied/);
    await createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.approver }).approve(operationId);
    const agentClient = createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.agent });
    expect(await agentClient.waitForOperation(operationId, { timeoutSeconds: 60 })).toMatchObject({ status: 'succeeded' });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_slow_agents');
    expect(charges).toHaveLength(1);
  });

  it('never executes a reused call id twice, whether the SDK lets the model reuse it or not', async () => {
    const model = new ScriptedModel([
      [{ callId: 'call_again', name: 'get_order', arguments: { orderId: 'ord_7' } }],
      [{ callId: 'call_again', name: 'get_order', arguments: { orderId: 'ord_7' } }],
      [{ callId: 'call_again', name: 'get_order', arguments: { orderId: 'ord_8' } }],
    ]);
    const runner = await toolrunnerAgents({ baseUrl: stack.apiUrl, key: stack.keys.agent, pollMs: 100 });
    const agent = new Agent({ name: 'support', instructions: 'Help the customer.', model, tools: runner.tools });
    const outcome = await runner.run(agent, 'Look at order ord_7.').then(
      () => 'finished' as const,
      (error: unknown) => error,
    );
    const [[first]] = [model.resultsOfTurn(0)];
    expect(first.output).toMatchObject({ status: 'succeeded', result: { id: 'ord_7' } });
    if (outcome === 'finished') {
      // The runner answers: the same arguments are the same operation, answered again; others are a conflict.
      const [[duplicate], [conflict]] = [1, 2].map((turn) => model.resultsOfTurn(turn));
      expect(duplicate.output).toEqual(first.output);
      expect(conflict.output).toMatchObject({ error: { code: 'call_id_conflict' } });
    } else {
      // Newer SDKs refuse the reuse themselves, before the tool runs again.
      expect(outcome).toMatchObject({ name: 'ModelBehaviorError', message: expect.stringContaining('reused') });
    }
    const events = await stack.api.trace(stack.keys.agent, runner.runId);
    expect(events.filter((e) => e.type === 'operation.proposed').map((e) => e.callId)).toEqual(['call_again']);
    expect(events.filter((e) => e.type === 'attempt.started')).toHaveLength(1);
  });
});

describe('approval cases: what the model reads matches the trace', () => {
  // A paused run is resumed from its saved state string and the run's id only: by a fresh adapter and agent,
  // and for an approved call (the one that must not run twice) in a new process.
  const env = (action?: Action) => ({
    apiUrl: stack.apiUrl,
    sandboxUrl: stack.sandboxUrl!,
    agentKey: stack.keys.agent,
    approverKey: stack.keys.approver,
    ...(action === 'approve' ? { resumeAgents: resumeInNewProcess } : {}),
  });
  approvalCaseSuite('openai-agents', () => stack, env);
});
