import {
  Agent,
  Runner,
  Usage,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents';
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModelId, modelSpendMiddleware } from '../../functions/agents/ai-sdk';
import type { ModelCallReservation, ModelCallUsage, ModelSpendClient } from '../../functions/agents/model-spend';
import { requestBytes } from '../../functions/agents/model-spend';
import { agentsModelId, modelSpendProvider } from '../../functions/agents/openai-agents';

/**
 * The adapters' model-spend guards against a stand-in for the runner's two model-call routes: a run whose cap
 * admits `fits` reservations and refuses the next. The runner side is tested with its routes; here, what each
 * adapter sends and how the framework's loop ends. These run at the oldest and the newest supported SDKs.
 */
function fakeRunner(fits: number) {
  const reservations: (ModelCallReservation & { runId: string })[] = [];
  const settlements: { modelCallId: string; usage: ModelCallUsage }[] = [];
  const refusal = 'the run has spent its budget (maxSpendCents 10); the model call was not made';
  const client: ModelSpendClient = {
    async reserveModelCall(runId, body) {
      if (reservations.length >= fits) return { status: 'refused', code: 'budget_exhausted', message: refusal };
      reservations.push({ runId, ...body });
      return { status: 'reserved', modelCallId: `mc_${reservations.length}`, reservedCents: 1, replayed: false };
    },
    async settleModelCall(_runId, modelCallId, usage) {
      settlements.push({ modelCallId, usage });
      return { modelCallId, status: 'settled', model: 'fake/model', reservedCents: 1, chargedCents: 1, replayed: false };
    },
  };
  return { client, reservations, settlements, refusal };
}

type DoGenerate = MockLanguageModelV3['doGenerate'];
type GenerateResult = Awaited<ReturnType<DoGenerate>>;
type DoStream = MockLanguageModelV3['doStream'];
type StreamResult = Awaited<ReturnType<DoStream>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;

const reported = (input: number, output: number, cacheRead = 0) => ({
  inputTokens: { total: input, noCache: input - cacheRead, cacheRead, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

/** A model that calls `lookup` on every turn (a loop only the cap ends), reporting 100 + turn input tokens and 7 output. */
function loopingModel() {
  const model = new MockLanguageModelV3({
    provider: 'openai.chat',
    modelId: 'gpt-4.1-mini',
    doGenerate: async ({ prompt }): Promise<GenerateResult> => {
      const turn = prompt.filter((m) => m.role === 'assistant').length + 1;
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${turn}`, toolName: 'lookup', input: JSON.stringify({ turn }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: reported(100 + turn, 7, turn === 2 ? 50 : 0),
        warnings: [],
      };
    },
  });
  return model;
}

const lookup = tool({
  description: 'looks something up',
  inputSchema: jsonSchema<{ turn: number }>({ type: 'object', properties: { turn: { type: 'number' } }, required: ['turn'] }),
  execute: async ({ turn }) => ({ found: turn }),
});

function streamOf(parts: StreamPart[]): StreamResult {
  return {
    stream: new ReadableStream<StreamPart>({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    }),
  };
}

const textParts = (text: string) =>
  [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: text },
    { type: 'text-end', id: 't' },
  ] as StreamPart[];

describe('AI SDK adapter: model calls under the run cap', () => {
  it('reserves before every call and settles each with its usage; the refused call ends the loop with the refusal as text', async () => {
    const runner = fakeRunner(3);
    const inner = loopingModel();
    const model = wrapLanguageModel({ model: inner, middleware: modelSpendMiddleware(runner.client, 'run_1') });
    const result = await generateText({ model, prompt: 'go', tools: { lookup }, stopWhen: stepCountIs(20) });

    // Three calls fit; the fourth is refused at the runner and never reaches the provider.
    expect(inner.doGenerateCalls).toHaveLength(3);
    expect(result.steps).toHaveLength(4);
    expect(result.text).toBe(runner.refusal);
    expect(result.finishReason).toBe('stop');
    expect(result.providerMetadata).toEqual({ toolrunner: { refused: 'budget_exhausted' } });
    expect(runner.reservations.map(({ requestId: _, inputTokens: __, ...r }) => r)).toEqual([
      { runId: 'run_1', model: 'openai/gpt-4.1-mini', maxOutputTokens: 4096 },
      { runId: 'run_1', model: 'openai/gpt-4.1-mini', maxOutputTokens: 4096 },
      { runId: 'run_1', model: 'openai/gpt-4.1-mini', maxOutputTokens: 4096 },
    ]);
    // Each reservation is its own request, sized by the prompt the model read (which grows each turn).
    expect(new Set(runner.reservations.map((r) => r.requestId)).size).toBe(3);
    inner.doGenerateCalls.forEach((call, i) => {
      expect(runner.reservations[i].inputTokens).toBe(
        requestBytes({ prompt: call.prompt, tools: call.tools, responseFormat: call.responseFormat }),
      );
      // The model is held to what was reserved for its answer.
      expect(call.maxOutputTokens).toBe(4096);
    });
    expect(runner.settlements).toEqual([
      { modelCallId: 'mc_1', usage: { inputTokens: 101, outputTokens: 7 } },
      { modelCallId: 'mc_2', usage: { inputTokens: 102, outputTokens: 7, cachedInputTokens: 50 } },
      { modelCallId: 'mc_3', usage: { inputTokens: 103, outputTokens: 7 } },
    ]);
  });

  it("reserves a call's own maxOutputTokens and the model id given in the options", async () => {
    const runner = fakeRunner(5);
    const model = wrapLanguageModel({
      model: loopingModel(),
      middleware: modelSpendMiddleware(runner.client, 'run_1', { model: 'azure/gpt-4.1-mini', estimateInputTokens: () => 42 }),
    });
    await generateText({ model, prompt: 'go', maxOutputTokens: 300 });
    expect(runner.reservations).toEqual([
      { runId: 'run_1', requestId: expect.any(String), model: 'azure/gpt-4.1-mini', maxOutputTokens: 300, inputTokens: 42 },
    ]);
  });

  it('settles a stream at its finish usage, and a stream that ends before its usage at the full reservation', async () => {
    const runner = fakeRunner(5);
    let withUsage = true;
    const inner = new MockLanguageModelV3({
      provider: 'anthropic.messages',
      modelId: 'claude-sonnet-4-5',
      doStream: async () =>
        streamOf([
          ...textParts('hello'),
          ...(withUsage
            ? ([{ type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage: reported(20, 3) }] as StreamPart[])
            : []),
        ]),
    });
    const model = wrapLanguageModel({
      model: inner,
      middleware: modelSpendMiddleware(runner.client, 'run_1', { maxOutputTokens: 500, estimateInputTokens: () => 64 }),
    });

    const first = streamText({ model, prompt: 'hi' });
    expect(await first.text).toBe('hello');
    withUsage = false;
    const second = streamText({ model, prompt: 'hi', onError: () => {} });
    await second.consumeStream();

    expect(runner.reservations.map((r) => [r.model, r.maxOutputTokens, r.inputTokens])).toEqual([
      ['anthropic/claude-sonnet-4-5', 500, 64],
      ['anthropic/claude-sonnet-4-5', 500, 64],
    ]);
    expect(runner.settlements).toEqual([
      { modelCallId: 'mc_1', usage: { inputTokens: 20, outputTokens: 3 } },
      { modelCallId: 'mc_2', usage: { inputTokens: 64, outputTokens: 500 } },
    ]);
  });

  it('answers a refused streamed call with the refusal as text and finish reason stop', async () => {
    const runner = fakeRunner(0);
    const inner = new MockLanguageModelV3({ doStream: async () => streamOf(textParts('never')) });
    const model = wrapLanguageModel({ model: inner, middleware: modelSpendMiddleware(runner.client, 'run_1') });
    const result = streamText({ model, prompt: 'hi' });
    expect(await result.text).toBe(runner.refusal);
    expect(await result.finishReason).toBe('stop');
    expect(inner.doStreamCalls).toHaveLength(0);
    expect(runner.settlements).toEqual([]);
  });

  it('settles a call the provider refused with an HTTP error at nothing, any other failure at the full reservation', async () => {
    const runner = fakeRunner(5);
    let failure: Error = Object.assign(new Error('rate limited'), { statusCode: 429 });
    const inner = new MockLanguageModelV3({
      doGenerate: async () => {
        throw failure;
      },
    });
    const model = wrapLanguageModel({
      model: inner,
      middleware: modelSpendMiddleware(runner.client, 'run_1', { maxOutputTokens: 10, estimateInputTokens: () => 5 }),
    });
    await expect(generateText({ model, prompt: 'hi', maxRetries: 0 })).rejects.toThrow('rate limited');
    failure = new Error('socket hang up');
    await expect(generateText({ model, prompt: 'hi', maxRetries: 0 })).rejects.toThrow('socket hang up');
    expect(runner.settlements).toEqual([
      { modelCallId: 'mc_1', usage: { inputTokens: 0, outputTokens: 0 } },
      { modelCallId: 'mc_2', usage: { inputTokens: 5, outputTokens: 10 } },
    ]);
  });

  it("names models as the runner's price table does", () => {
    expect(aiSdkModelId({ provider: 'openai.responses', modelId: 'gpt-4.1' })).toBe('openai/gpt-4.1');
    expect(aiSdkModelId({ provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5' })).toBe('anthropic/claude-sonnet-4-5');
    expect(aiSdkModelId({ provider: 'google.generative-ai', modelId: 'gemini-2.5-pro' })).toBe('google/gemini-2.5-pro');
    expect(aiSdkModelId({ provider: 'google.vertex.chat', modelId: 'gemini-2.5-pro' })).toBe('google/gemini-2.5-pro');
    expect(aiSdkModelId({ provider: 'vertex.anthropic.messages', modelId: 'claude-sonnet-4-5' })).toBe('anthropic/claude-sonnet-4-5');
    expect(aiSdkModelId({ provider: 'amazon-bedrock', modelId: 'anthropic.claude-3-5-sonnet' })).toBe('aws/anthropic.claude-3-5-sonnet');
    expect(aiSdkModelId({ provider: 'xai.chat', modelId: 'grok-4' })).toBe('x-ai/grok-4');
    expect(aiSdkModelId({ provider: 'gateway', modelId: 'xai/grok-4' })).toBe('x-ai/grok-4');
    expect(agentsModelId('gpt-4.1')).toBe('openai/gpt-4.1');
    expect(agentsModelId('claude-sonnet-4-5', 'anthropic')).toBe('anthropic/claude-sonnet-4-5');
  });
});

/** An Agents SDK model that calls `lookup` every turn, reporting 100 input (30 cached) and 9 output tokens. */
class LoopingAgentsModel implements Model {
  readonly requests: ModelRequest[] = [];
  streamUsage = true;
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return {
      usage: new Usage({ requests: 1, inputTokens: 100, outputTokens: 9, totalTokens: 109, inputTokensDetails: { cached_tokens: 30 } }),
      output: [
        {
          type: 'function_call',
          callId: `call_${this.requests.length}`,
          name: 'lookup',
          arguments: JSON.stringify({ turn: this.requests.length }),
          status: 'completed',
        },
      ],
    };
  }
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    this.requests.push(request);
    yield { type: 'response_started' } as StreamEvent;
    yield { type: 'output_text_delta', delta: 'hello' } as StreamEvent;
    if (!this.streamUsage) return;
    yield {
      type: 'response_done',
      response: {
        id: 'resp_1',
        usage: { requests: 1, inputTokens: 12, outputTokens: 2, totalTokens: 14 },
        output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hello' }] }],
      },
    } as StreamEvent;
  }
}

const providerOf = (model: Model): ModelProvider => ({ getModel: () => model });

describe('OpenAI Agents adapter: model calls under the run cap', () => {
  const agentTool = async () => {
    const { tool: agentsTool } = await import('@openai/agents');
    return agentsTool({
      name: 'lookup',
      description: 'looks something up',
      parameters: { type: 'object', properties: { turn: { type: 'number' } }, required: ['turn'], additionalProperties: false },
      strict: true,
      execute: async (input: unknown) => JSON.stringify({ found: (input as { turn: number }).turn }),
    } as never);
  };

  it("reserves and settles every call through the model provider; the refused call's text is the run's final output", async () => {
    const runner = fakeRunner(2);
    const inner = new LoopingAgentsModel();
    const agent = new Agent({ name: 'looper', instructions: 'loop', model: 'gpt-4.1', tools: [await agentTool()] });
    const result = await new Runner({ modelProvider: modelSpendProvider(providerOf(inner), runner.client, 'run_2') }).run(agent, 'go', {
      maxTurns: 10,
    });

    expect(inner.requests).toHaveLength(2);
    expect(result.finalOutput).toBe(runner.refusal);
    expect(runner.reservations.map((r) => [r.runId, r.model, r.maxOutputTokens])).toEqual([
      ['run_2', 'openai/gpt-4.1', 4096],
      ['run_2', 'openai/gpt-4.1', 4096],
    ]);
    inner.requests.forEach((request, i) => {
      const { systemInstructions, input, tools, handoffs, outputType } = request;
      expect(runner.reservations[i].inputTokens).toBe(requestBytes({ systemInstructions, input, tools, handoffs, outputType }));
      expect(request.modelSettings.maxTokens).toBe(4096);
    });
    expect(runner.settlements).toEqual([
      { modelCallId: 'mc_1', usage: { inputTokens: 100, outputTokens: 9, cachedInputTokens: 30 } },
      { modelCallId: 'mc_2', usage: { inputTokens: 100, outputTokens: 9, cachedInputTokens: 30 } },
    ]);
  });

  it('settles a streamed call at its usage, one that ends before its usage at the full reservation, and streams a refusal as text', async () => {
    const runner = fakeRunner(2);
    const inner = new LoopingAgentsModel();
    const agent = new Agent({ name: 'talker', instructions: 'talk', model: 'gpt-4.1-mini', modelSettings: { maxTokens: 200 } });
    const modelRunner = new Runner({
      modelProvider: modelSpendProvider(providerOf(inner), runner.client, 'run_3', { estimateInputTokens: () => 33 }),
    });
    const first = await modelRunner.run(agent, 'hi', { stream: true });
    await first.completed;
    expect(first.finalOutput).toBe('hello');

    inner.streamUsage = false;
    const second = await modelRunner.run(agent, 'hi', { stream: true });
    await second.completed.catch(() => {});

    const third = await modelRunner.run(agent, 'hi', { stream: true });
    await third.completed;
    expect(third.finalOutput).toBe(runner.refusal);

    expect(inner.requests).toHaveLength(2);
    expect(runner.reservations.map((r) => [r.model, r.maxOutputTokens, r.inputTokens])).toEqual([
      ['openai/gpt-4.1-mini', 200, 33],
      ['openai/gpt-4.1-mini', 200, 33],
    ]);
    expect(runner.settlements).toEqual([
      { modelCallId: 'mc_1', usage: { inputTokens: 12, outputTokens: 2 } },
      { modelCallId: 'mc_2', usage: { inputTokens: 33, outputTokens: 200 } },
    ]);
  });
});
