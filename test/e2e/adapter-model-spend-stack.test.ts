import { Agent, Runner, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolrunnerAiSdk } from '../../functions/agents/ai-sdk';
import { toolrunnerAgents } from '../../functions/agents/openai-agents';
import { createClient } from '../../functions/client';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 49 });
  // Round prices: 1 cent per thousand input tokens, 4 per thousand output tokens.
  stack.editConfig((config) => {
    (config as { modelPrices?: unknown }).modelPrices = {
      'openai/gpt-4.1-mini': { inputPerMillionCents: 1000, outputPerMillionCents: 4000 },
    };
  });
});
afterAll(async () => stack?.stop());

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

/** An agent's model that looks up another order every turn (a loop only the cap ends), each call using 500 input and 200 output tokens. */
function loopingModel() {
  return new MockLanguageModelV3({
    provider: 'openai.responses',
    modelId: 'gpt-4.1-mini',
    doGenerate: async ({ prompt }): Promise<GenerateResult> => {
      const turn = prompt.filter((m) => m.role === 'assistant').length + 1;
      return {
        content: [
          { type: 'tool-call', toolCallId: `call_${turn}`, toolName: 'get_order', input: JSON.stringify({ orderId: `ord_${turn}` }) },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: {
          inputTokens: { total: 500, noCache: 500, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 200, text: 200, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
}

describe('an AI SDK agent under one budget for model and tool spend', () => {
  it('is stopped at its cap mid-loop: each model call reserved and settled at its price in the trace, the refusal its last answer', async () => {
    const runner = await toolrunnerAiSdk({ baseUrl: stack.apiUrl, key: stack.keys.agent, budgets: { maxSpendCents: 8 } });
    const inner = loopingModel();
    // Each call reserves 1000 input tokens (1 cent) and its 1000 output tokens (4 cents): 5 cents, and is
    // charged 0.5 + 0.8 = 1.3 cents. Held before each call: 0, 1.3, 2.6, then 3.9 + 5 > 8: the fourth is refused.
    const model = runner.wrapModel(inner, { estimateInputTokens: () => 1000 });
    const result = await generateText({
      model,
      ...runner.toolSettings,
      prompt: 'look up every order',
      maxOutputTokens: 1000,
      stopWhen: stepCountIs(20),
    });

    expect(inner.doGenerateCalls).toHaveLength(3);
    expect(result.steps).toHaveLength(4);
    expect(result.finishReason).toBe('stop');
    expect(result.text).toBe('this model call could cost 5 cents; the run has 4.1 of its 8 cents left (maxSpendCents)');
    // The tools ran between the model calls.
    expect(result.steps.slice(0, 3).map((s) => s.toolResults.map((r) => r.toolName))).toEqual([
      ['get_order'],
      ['get_order'],
      ['get_order'],
    ]);

    const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.agent });
    // Three calls at 1.3 cents; the refused one reserved nothing; the demo's get_order costs nothing.
    expect((await client.getRun(runner.runId)).usage).toMatchObject({ spendCents: 3.9, modelSpendCents: 3.9, toolSpendCents: 0 });
    const trace = await client.getTrace(runner.runId);
    const modelEvents = trace.filter((e) => e.type.startsWith('model_call.'));
    const call = (n: number) => modelEvents[2 * n].detail?.modelCallId;
    const reserved = (n: number) => ({
      type: 'model_call.reserved',
      detail: expect.objectContaining({ modelCallId: call(n), model: 'openai/gpt-4.1-mini', reservedCents: 5 }),
    });
    const settled = (n: number) => ({
      type: 'model_call.settled',
      detail: expect.objectContaining({
        modelCallId: call(n),
        model: 'openai/gpt-4.1-mini',
        reservedCents: 5,
        chargedCents: 1.3,
        inputTokens: 500,
        outputTokens: 200,
      }),
    });
    expect(modelEvents).toEqual(
      [reserved(0), settled(0), reserved(1), settled(1), reserved(2), settled(2)].map((e) => expect.objectContaining(e)),
    );
    expect(new Set([call(0), call(1), call(2)]).size).toBe(3);
    // Each model call was settled before the tool call its answer asked for was proposed.
    const order = trace.filter((e) => e.type === 'model_call.settled' || e.type === 'operation.proposed').map((e) => e.type);
    expect(order).toEqual([1, 2, 3].flatMap(() => ['model_call.settled', 'operation.proposed']));
  });
});

/** The same loop as an Agents SDK model: another order every turn, 500 input and 200 output tokens a call. */
class LoopingAgentsModel implements Model {
  readonly requests: ModelRequest[] = [];
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const turn = this.requests.length;
    return {
      usage: new Usage({ requests: 1, inputTokens: 500, outputTokens: 200, totalTokens: 700 }),
      output: [
        {
          type: 'function_call',
          callId: `call_${turn}`,
          name: 'get_order',
          arguments: JSON.stringify({ orderId: `ord_${turn}` }),
          status: 'completed',
        },
      ],
    };
  }
  getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed here');
  }
}

describe('an OpenAI Agents SDK agent under the same budget', () => {
  it('is stopped at its cap mid-loop through the model provider, the refusal its final output', async () => {
    const adapter = await toolrunnerAgents({ baseUrl: stack.apiUrl, key: stack.keys.agent, budgets: { maxSpendCents: 8 } });
    const inner = new LoopingAgentsModel();
    const agent = new Agent({
      name: 'looper',
      instructions: 'look up orders',
      model: 'gpt-4.1-mini',
      tools: adapter.tools,
      modelSettings: { maxTokens: 1000 },
    });
    const modelProvider = adapter.modelProvider({ getModel: () => inner }, { estimateInputTokens: () => 1000 });
    const result = await new Runner({ modelProvider }).run(agent, 'look up every order', { maxTurns: 20 });

    expect(inner.requests).toHaveLength(3);
    expect(result.finalOutput).toBe('this model call could cost 5 cents; the run has 4.1 of its 8 cents left (maxSpendCents)');
    const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.keys.agent });
    expect((await client.getRun(adapter.runId)).usage).toMatchObject({ spendCents: 3.9, modelSpendCents: 3.9, toolSpendCents: 0 });
    const trace = await client.getTrace(adapter.runId);
    expect(
      trace
        .filter((e) => e.type.startsWith('model_call.'))
        .map((e) => [e.type, e.detail?.model, e.detail?.reservedCents, e.detail?.chargedCents]),
    ).toEqual(
      [1, 2, 3].flatMap(() => [
        ['model_call.reserved', 'openai/gpt-4.1-mini', 5, undefined],
        ['model_call.settled', 'openai/gpt-4.1-mini', 5, 1.3],
      ]),
    );
  });
});
