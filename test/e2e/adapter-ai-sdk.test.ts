import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalCaseSuite } from '../support/approval-case-suite';
import { hasCallLevelApproval, toolrunnerAiSdk } from '../../functions/agents/ai-sdk';
import { createClient, operationIdFor } from '../../functions/client';
import { startApprover } from '../support/approver';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 4 });
});
afterAll(async () => stack?.stop());

type Call = { callId: string; name: string; arguments: unknown };
type DoGenerate = MockLanguageModelV3['doGenerate'];
type LanguageModelV3CallOptions = Parameters<DoGenerate>[0];
type LanguageModelV3GenerateResult = Awaited<ReturnType<DoGenerate>>;
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** The AI SDK's own mock model, answering from a script: one list of tool calls per model call, then text. */
function scriptedModel(turns: Call[][]) {
  const prompts: LanguageModelV3CallOptions['prompt'][] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options): Promise<LanguageModelV3GenerateResult> => {
      prompts.push(options.prompt);
      const calls = turns[prompts.length - 1];
      if (!calls) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      return {
        content: calls.map((c) => ({
          type: 'tool-call' as const,
          toolCallId: c.callId,
          toolName: c.name,
          input: JSON.stringify(c.arguments),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
  });
  /** What the model read back after a turn: the tool results new in the next prompt. */
  const resultsOfTurn = (turn: number) => {
    const parts = (prompt: LanguageModelV3CallOptions['prompt'] | undefined) =>
      (prompt ?? []).flatMap((m) => (m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-result') : []));
    return parts(prompts[turn + 1])
      .slice(parts(prompts[turn]).length)
      .map((p: any) => ({
        callId: p.toolCallId as string,
        output: p.output.type === 'execution-denied' ? { denied: JSON.parse(p.output.reason) } : p.output.value,
      }));
  };
  return { model, resultsOfTurn };
}

describe('Vercel AI SDK adapter', () => {
  it('runs against the SDK version its test project names', async () => {
    // `ai/test` has the V4 mock model from AI SDK 7 on: the newest-sdks project must load 7, the default one 6.
    expect('MockLanguageModelV4' in (await import('ai/test'))).toBe(process.env.TOOLRUNNER_SDKS === 'newest');
  });

  it('runs reads, writes, approvals, duplicates and conflicts through the runner', async () => {
    const address = { line1: '3 High St', city: 'Capital City', postalCode: '99999', country: 'US' };
    const { model, resultsOfTurn } = scriptedModel([
      [
        { callId: 'tc_read', name: 'get_order', arguments: { orderId: 'ord_8' } },
        { callId: 'tc_write', name: 'update_shipping_address', arguments: { orderId: 'ord_8', address } },
      ],
      [{ callId: 'tc_big', name: 'charge_card', arguments: { amount: 55_000, currency: 'EUR', customer: 'cus_b', description: null } }],
      [{ callId: 'tc_no', name: 'charge_card', arguments: { amount: 80_000, currency: 'EUR', customer: 'cus_b' } }],
      [{ callId: 'tc_read', name: 'get_order', arguments: { orderId: 'ord_8' } }],
      [{ callId: 'tc_read', name: 'get_order', arguments: { orderId: 'ord_9' } }],
    ]);
    const runner = await toolrunnerAiSdk({
      baseUrl: stack.apiUrl,
      key: stack.keys.agent,
      pollMs: 100,
      budgets: { maxSpendCents: 1_000_000 },
    });
    const approver = startApprover(
      stack,
      () => runner.runId,
      (a) => (a.arguments.amount === 55_000 ? 'approve' : 'reject'),
    );
    try {
      const result = await runner.generate({ model, prompt: 'Fix order ord_8 and charge the customer.' });
      expect(result.text).toBe('done');
    } finally {
      await approver.stop();
    }
    expect(approver.decided.map((d) => [d.arguments.amount, d.decision])).toEqual([
      [55_000, 'approve'],
      [80_000, 'reject'],
    ]);

    const first = resultsOfTurn(0);
    const [read, write] = ['tc_read', 'tc_write'].map((id) => first.find((r) => r.callId === id)!);
    const [[big], [no], [duplicate], [conflict]] = [1, 2, 3, 4].map((turn) => resultsOfTurn(turn));
    expect(read.output).toMatchObject({ status: 'succeeded', call_id: 'tc_read', result: { id: 'ord_8' } });
    expect(write.output).toMatchObject({ status: 'succeeded', result: { shippingAddress: address } });
    expect(big).toMatchObject({ callId: 'tc_big', output: { status: 'succeeded', result: { amount: 55_000 } } });
    expect(no).toMatchObject({ callId: 'tc_no', output: { denied: { status: 'rejected', code: 'approval_rejected' } } });
    expect(duplicate.output).toEqual(read.output);
    expect(conflict.output).toMatchObject({ error: { code: 'call_id_conflict' } });

    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge');
    expect(charges.map((c) => c.body.amount)).toEqual([55_000]);
    const events = await stack.api.trace(stack.keys.agent, runner.runId);
    expect(
      events
        .filter((e) => e.type === 'operation.proposed')
        .map((e) => e.callId)
        .sort(),
    ).toEqual(['tc_big', 'tc_no', 'tc_read', 'tc_write']);
  });
});

describe('approval cases: what the model reads matches the trace', () => {
  const env = () => ({ apiUrl: stack.apiUrl, sandboxUrl: stack.sandboxUrl!, agentKey: stack.keys.agent, approverKey: stack.keys.approver });
  approvalCaseSuite('ai-sdk', () => stack, env);

  it('asks its approval question as the installed ai takes it: call-level toolApproval on 7, needsApproval on 6', async () => {
    const runner = await toolrunnerAiSdk({ baseUrl: stack.apiUrl, key: stack.keys.agent });
    const seven = process.env.TOOLRUNNER_SDKS === 'newest';
    expect(hasCallLevelApproval()).toBe(seven);
    for (const tool of Object.values(runner.tools)) expect('needsApproval' in tool && tool.needsApproval !== undefined).toBe(!seven);
    expect('toolApproval' in runner.toolSettings).toBe(seven);
    expect(runner.toolSettings.tools).toBe(runner.tools);
  });

  it('tells the model "pending" with the operation id when the wait ends before the approver, never "denied"', async () => {
    const { model, resultsOfTurn } = scriptedModel([
      [{ callId: 'tc_slow', name: 'charge_card', arguments: { amount: 65_000, currency: 'EUR', customer: 'cus_slow' } }],
    ]);
    const runner = await toolrunnerAiSdk({ baseUrl: stack.apiUrl, key: stack.keys.agent, pollMs: 50, approvalTimeoutMs: 300 });
    const result = await runner.generate({ model, prompt: 'Charge cus_slow.' });
    expect(result.text).toBe('done');
    const operationId = operationIdFor(runner.runId, 'tc_slow');
    const [read] = resultsOfTurn(0);
    expect(read.output).toMatchObject({ status: 'pending', operationId, state: 'awaiting_approval' });
    expect(JSON.stringify(read.output)).not.toMatch(/denied/);
    // The call still waits at the runner: an approver's decision runs it, once.
    const approver = createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.approver });
    await approver.approve(operationId);
    const agent = createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.agent });
    expect(await agent.waitForOperation(operationId, { timeoutSeconds: 60 })).toMatchObject({ status: 'succeeded' });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_slow');
    expect(charges).toHaveLength(1);
  });
});
