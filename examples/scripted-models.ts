import { Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { MockLanguageModelV3 } from 'ai/test';

/**
 * Stand-ins for a real model, so the examples (and the adapter tests) run without an API key: each answers
 * from a script, one list of tool calls per turn, then a text that says what the tools answered. Where the
 * script stands is read from the conversation itself, so a model made afresh in another process continues it.
 * In your agent, use a real model instead (`openai('gpt-4.1')`, `model: 'gpt-4.1'`).
 */
export interface ScriptedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** The model's tool call id; by default `call_<turn>_<index>`. */
  callId?: string;
}

type DoGenerate = MockLanguageModelV3['doGenerate'];
type Prompt = Parameters<DoGenerate>[0]['prompt'];
type GenerateResult = Awaited<ReturnType<DoGenerate>>;
const aiUsage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A line per tool result the model read last: the tool's name and the text it read (the runner's envelope). */
function summary(results: { name: string; output: unknown }[]): string {
  return results.map((r) => `${r.name}: ${readable(r.output)}`).join('\n') || 'done';
}

/** The text inside a framework's tool output: AI SDK `json` / `execution-denied`, Agents SDK text items. */
function readable(output: unknown): string {
  const o = output as { type?: string; value?: unknown; reason?: string; text?: string };
  if (typeof output === 'string') return output;
  if (o.type === 'json') return JSON.stringify(o.value);
  if (o.type === 'execution-denied') return `denied: ${o.reason}`;
  if (o.type === 'text' || o.type === 'input_text') return o.text ?? '';
  return JSON.stringify(output);
}

/** The AI SDK's own mock model (`ai/test`), answering from a script. `doGenerateCalls` keeps every prompt it read. */
export function scriptedAiSdkModel(turns: ScriptedCall[][]): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }): Promise<GenerateResult> => {
      const turn = prompt.filter((m) => m.role === 'assistant').length;
      const calls = turns[turn];
      if (!calls) {
        const text = summary(lastToolResults(prompt).map((p) => ({ name: p.toolName, output: p.output })));
        return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage: aiUsage, warnings: [] };
      }
      return {
        content: calls.map((c, i) => ({
          type: 'tool-call' as const,
          toolCallId: c.callId ?? `call_${turn + 1}_${i + 1}`,
          toolName: c.name,
          input: JSON.stringify(c.arguments),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: aiUsage,
        warnings: [],
      };
    },
  });
}

/** The tool results of the prompt's last tool message: what the model read after its last turn. */
export function lastToolResults(prompt: Prompt) {
  const last = [...prompt].reverse().find((m) => m.role === 'tool');
  return last && last.role === 'tool' ? last.content.filter((p) => p.type === 'tool-result') : [];
}

/** The OpenAI Agents SDK's `Model` interface, answering from a script. `requests` keeps every request it read. */
export class ScriptedAgentsModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: ScriptedCall[][]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const items = typeof request.input === 'string' ? [] : request.input;
    // The turn: how many of the script's calls the conversation already holds.
    const made = items.filter((i) => i.type === 'function_call').length;
    let turn = 0;
    for (let seen = 0; turn < this.turns.length && seen + this.turns[turn].length <= made; turn++) seen += this.turns[turn].length;
    const calls = this.turns[turn];
    const usage = new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 });
    if (!calls) {
      const names = new Map(items.flatMap((i) => (i.type === 'function_call' ? [[i.callId, i.name] as const] : [])));
      const results = items.flatMap((i) =>
        i.type === 'function_call_result' ? [{ name: names.get(i.callId) ?? '?', output: i.output }] : [],
      );
      const text = summary(results.slice(-(this.turns.at(-1)?.length ?? 1)));
      return {
        usage,
        output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
        responseId: `resp_${turn + 1}`,
      };
    }
    return {
      usage,
      output: calls.map((c, i) => ({
        type: 'function_call' as const,
        callId: c.callId ?? `call_${turn + 1}_${i + 1}`,
        name: c.name,
        arguments: JSON.stringify(c.arguments),
        status: 'completed' as const,
      })),
      responseId: `resp_${turn + 1}`,
    };
  }

  getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted model does not stream');
  }
}
