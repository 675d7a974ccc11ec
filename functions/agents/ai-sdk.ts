import * as aiSdk from 'ai';
import {
  generateText,
  jsonSchema,
  stepCountIs,
  tool,
  wrapLanguageModel,
  type LanguageModelMiddleware,
  type ModelMessage,
  type Tool,
  type ToolApprovalResponse,
} from 'ai';
import type { Operation } from '../client';
import {
  aiSdkModelId,
  DEFAULT_MAX_OUTPUT_TOKENS,
  isProviderRefusal,
  NOTHING_USED,
  requestBytes,
  reserveModelCall,
  type ModelCallUsage,
  type ModelSpendClient,
  type ModelSpendOptions,
  type ReservedModelCall,
} from './model-spend';
import {
  RunnerSession,
  modelText,
  runnerDecision,
  type ModelVisibleResult,
  type PendingApproval,
  type RunnerDecision,
  type RunnerTool,
  type ToolrunnerOptions,
} from './runner-tools';

export { runnerDecision, type ModelVisibleResult, type PendingApproval, type RunnerDecision, type ToolrunnerOptions };
export { aiSdkModelId, type ModelSpendClient, type ModelSpendOptions };

/**
 * The runner's tools as Vercel AI SDK tools. The SDK's toolCallId becomes the runner's callId and the model
 * reads the envelope. A call the runner's policy holds for a person becomes the SDK's own pause: the approval
 * question (ai 7's call-level `toolApproval`, or the tool-level `needsApproval` on ai 6) says yes (and the
 * call is already waiting at the runner for its approver), `generateText` ends with a `tool-approval-request`,
 * and the approver's decision at the runner becomes the `tool-approval-response` that resumes it
 * (`approvalResponses`, or `settleApprovals` to wait in process).
 */
export interface ToolrunnerAiSdk {
  runId: string;
  /** The runner's tools; on ai 6 each carries `needsApproval`, on ai 7 the question is `toolApproval`. */
  tools: Record<string, Tool>;
  /**
   * What to spread into `generateText`, `streamText` or an Agent: `{ tools }`, and on ai 7 also the call-level
   * `toolApproval` that asks the runner which calls wait for a person (ai 7 deprecates the tool-level `needsApproval`).
   */
  toolSettings: { tools: Record<string, Tool> };
  /** ai 7's call-level approval question, one function per tool: `user-approval` when the runner holds the call for a person. */
  toolApproval: Record<string, ToolApprovalQuestion>;
  /** The approval requests in `source` not answered there yet, each with the operation waiting for its approver. */
  pendingApprovals(source: ApprovalSource): Promise<(PendingApproval & { approvalId: string })[]>;
  /**
   * The tool message answering every open approval request in `source` with the runner's decision, read now
   * (never waiting); undefined while any of them waits for a person. Append it to the messages and call
   * `generateText` again: approved calls run (the runner's result, never a second execution), denied ones
   * reach the model as `execution-denied` with the runner's envelope as the reason.
   */
  approvalResponses(source: ApprovalSource): Promise<ModelMessage | undefined>;
  /**
   * As `approvalResponses`, but waits for the approvers (up to `approvalTimeoutMs`). A call still undecided then
   * is let through to the runner, which still holds it: the model reads `pending` with the operation id, never a denial.
   */
  settleApprovals(source: ApprovalSource): Promise<ModelMessage | undefined>;
  /**
   * `model` with every call reserved at the runner before it runs and settled with its usage after, so the
   * run's `maxSpendCents` covers the model too. A call the runner refuses (the cap reached) answers the
   * refusal as the assistant's text with finish reason `stop`: the agent's loop ends as after any answer.
   */
  wrapModel(model: WrappableModel, options?: ModelSpendOptions): ReturnType<typeof wrapLanguageModel>;
  /** `generateText` (default: up to 20 steps) until no approval is open, waiting in process for each decision. */
  generate(options: GenerateOptions): Promise<Awaited<ReturnType<typeof generateText>>>;
}

/**
 * The messages a `generateText` call added to the conversation, over all its steps: `responseMessages` on
 * AI SDK 7, `response.messages` on 6 (where 7 keeps only the last step's). Append them to the conversation.
 */
export function responseMessages(result: { response: { messages: ModelMessage[] } }): ModelMessage[] {
  return (result as { responseMessages?: ModelMessage[] }).responseMessages ?? result.response.messages;
}

/** ai 7's per-tool approval function (`toolApproval`), answered by the runner (see `ToolrunnerAiSdk.toolApproval`). */
export type ToolApprovalQuestion = (
  input: unknown,
  options: { toolCallId: string; messages: ModelMessage[] },
) => Promise<'user-approval' | 'not-applicable'>;

/**
 * Does the installed `ai` take the call-level `toolApproval`? Every ai 7 release does (and deprecates the
 * tool-level `needsApproval`); ai 7 is recognised by its `isStepCount` export, which ai 6 lacks.
 */
export function hasCallLevelApproval(sdk: Record<string, unknown> = aiSdk): boolean {
  return typeof sdk.isStepCount === 'function';
}

/** Where approval requests are read from: a `generateText` result, or the conversation's messages. */
export type ApprovalSource = { content: ReadonlyArray<unknown> } | ReadonlyArray<ModelMessage>;

/** The options of `generate`: those of `generateText`, with the runner's tools and a prompt or messages. */
export type GenerateOptions = Omit<Parameters<typeof generateText>[0], 'tools' | 'prompt' | 'messages'> & {
  prompt?: string;
  messages?: ModelMessage[];
};

/**
 * The AI SDK's answer to one approval request from the runner's decision in `operation`: approved, or
 * denied with the envelope the model reads as the reason; undefined while nobody decided.
 */
export function toolApprovalResponse(approvalId: string, operation: Operation): ToolApprovalResponse | undefined {
  return responseOf(approvalId, runnerDecision(operation));
}

function responseOf(approvalId: string, decision: RunnerDecision): ToolApprovalResponse | undefined {
  if (decision.status === 'pending') return undefined;
  // Undecided: through to the runner, which still holds the call; the model reads its pending answer.
  if (decision.status === 'approved' || decision.status === 'undecided')
    return { type: 'tool-approval-response', approvalId, approved: true };
  return { type: 'tool-approval-response', approvalId, approved: false, reason: modelText(decision.result) };
}

interface OpenRequest {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** The approval requests of `source` that no tool-approval-response in it answers yet. */
function openRequests(source: ApprovalSource): OpenRequest[] {
  const parts: Record<string, unknown>[] = [];
  if (Array.isArray(source)) {
    for (const message of source as ModelMessage[]) if (Array.isArray(message.content)) parts.push(...(message.content as never[]));
  } else {
    parts.push(...((source as { content: Record<string, unknown>[] }).content ?? []));
  }
  const calls = new Map<string, { toolName: string; input: unknown }>();
  const answered = new Set<string>();
  const requests: { approvalId: string; toolCallId: string }[] = [];
  for (const part of parts) {
    if (part.type === 'tool-call') calls.set(part.toolCallId as string, { toolName: part.toolName as string, input: part.input });
    if (part.type === 'tool-approval-response') answered.add(part.approvalId as string);
    if (part.type === 'tool-approval-request') {
      // A result's content carries the call itself; a message names it by id.
      const call = part.toolCall as { toolCallId: string; toolName: string; input: unknown } | undefined;
      if (call) calls.set(call.toolCallId, { toolName: call.toolName, input: call.input });
      requests.push({ approvalId: part.approvalId as string, toolCallId: call?.toolCallId ?? (part.toolCallId as string) });
    }
  }
  return requests.filter((r) => !answered.has(r.approvalId) && calls.has(r.toolCallId)).map((r) => ({ ...r, ...calls.get(r.toolCallId)! }));
}

/** Opens a run (or joins `options.runId`) and gives its tools to the AI SDK; see `ToolrunnerAiSdk`. */
export async function toolrunnerAiSdk(options: ToolrunnerOptions): Promise<ToolrunnerAiSdk> {
  const session = await RunnerSession.open(options);
  const specs = await session.tools();
  const byName = new Map(specs.map((s) => [s.name, s]));
  // The turn of a call: model responses so far in the conversation that led to it.
  const turnOf = (messages: ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length + 1;

  const callLevel = hasCallLevelApproval();
  const ask =
    (spec: RunnerTool) =>
    (input: unknown, { toolCallId, messages }: { toolCallId: string; messages: ModelMessage[] }) =>
      session.needsApproval(spec, toolCallId, turnOf(messages), input);
  const tools: Record<string, Tool> = Object.fromEntries(
    specs.map((spec: RunnerTool) => [
      spec.name,
      tool({
        description: spec.description,
        inputSchema: jsonSchema<Record<string, unknown>>(spec.parameters),
        strict: spec.strict,
        ...(callLevel ? {} : { needsApproval: ask(spec) }),
        // The model reads the envelope (or the runner's refusal) as the tool's JSON output.
        execute: (input, { toolCallId, messages, abortSignal }) => session.call(spec, toolCallId, turnOf(messages), input, abortSignal),
      }),
    ]),
  );
  const toolApproval: Record<string, ToolApprovalQuestion> = Object.fromEntries(
    specs.map((spec) => [
      spec.name,
      async (input: unknown, options: Parameters<ToolApprovalQuestion>[1]) =>
        (await ask(spec)(input, options)) ? ('user-approval' as const) : ('not-applicable' as const),
    ]),
  );
  // The extra key stays invisible to ai 6's types, where generateText has no `toolApproval`.
  const toolSettings = (callLevel ? { tools, toolApproval } : { tools }) as { tools: Record<string, Tool> };

  async function answer(source: ApprovalSource, decide: (request: OpenRequest) => Promise<RunnerDecision>) {
    const requests = openRequests(source).filter((r) => byName.has(r.toolName));
    if (requests.length === 0) return undefined;
    const responses: ToolApprovalResponse[] = [];
    for (const request of requests) {
      const response = responseOf(request.approvalId, await decide(request));
      if (!response) return undefined;
      responses.push(response);
    }
    return { role: 'tool', content: responses } as ModelMessage;
  }

  const settleApprovals = (source: ApprovalSource) =>
    answer(source, (request) => session.awaitDecision(byName.get(request.toolName)!, request.toolCallId, 1, request.input));

  return {
    runId: session.runId,
    tools,
    toolSettings,
    toolApproval,
    async pendingApprovals(source) {
      const waiting: (PendingApproval & { approvalId: string })[] = [];
      for (const request of openRequests(source)) {
        if (!byName.has(request.toolName) || (await session.readDecision(request.toolCallId)).status !== 'pending') continue;
        const { approvalId, toolCallId: callId, toolName } = request;
        waiting.push({ approvalId, callId, toolName, operationId: session.operationIdOf(callId) });
      }
      return waiting;
    },
    approvalResponses: (source) => answer(source, (request) => session.readDecision(request.toolCallId)),
    settleApprovals,
    wrapModel: (model, modelOptions) =>
      wrapLanguageModel({ model, middleware: modelSpendMiddleware(session.client, session.runId, modelOptions) }),
    async generate({ prompt, messages: given, ...rest }) {
      let messages: ModelMessage[] = given ?? [{ role: 'user', content: prompt ?? '' }];
      for (;;) {
        const result = await generateText({ stopWhen: stepCountIs(20), ...rest, ...toolSettings, messages } as Parameters<
          typeof generateText
        >[0]);
        const reply = await settleApprovals(result);
        if (!reply) return result;
        messages = [...messages, ...responseMessages(result), reply];
      }
    },
  };
}

/** A model `wrapLanguageModel` takes: a provider's model object (`openai('gpt-4.1')`). */
export type WrappableModel = Parameters<typeof wrapLanguageModel>[0]['model'];

type WrapGenerate = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
type CallParams = WrapGenerate['params'];
type GenerateResult = Awaited<ReturnType<WrapGenerate['doGenerate']>>;
type StreamResult = Awaited<ReturnType<WrapGenerate['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
type Usage = GenerateResult['usage'];

/**
 * The AI SDK language-model middleware that reserves every call of a model at the runner and settles it with
 * the provider's usage (`wrapLanguageModel({ model, middleware })`; `wrapModel` does this for the adapter's
 * run). A call without `maxOutputTokens` is given `options.maxOutputTokens`, so what was reserved bounds it.
 */
export function modelSpendMiddleware(client: ModelSpendClient, runId: string, options: ModelSpendOptions = {}): LanguageModelMiddleware {
  const estimate = options.estimateInputTokens ?? requestBytes;
  const reserve = async (params: CallParams, model: { provider: string; modelId: string }) =>
    reserveModelCall(client, runId, {
      model: options.model ?? aiSdkModelId(model),
      maxOutputTokens: params.maxOutputTokens ?? options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      inputTokens: estimate({ prompt: params.prompt, tools: params.tools, responseFormat: params.responseFormat }),
    });
  return {
    specificationVersion: 'v3',
    transformParams: async ({ params }) => ({
      ...params,
      maxOutputTokens: params.maxOutputTokens ?? options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
    }),
    wrapGenerate: async ({ doGenerate, params, model }) => {
      const admission = await reserve(params, model);
      if (admission.kind === 'refused') return refusedAnswer(admission.message, admission.code);
      const { call } = admission;
      let result: GenerateResult;
      try {
        result = await doGenerate();
      } catch (error) {
        await call.settle(isProviderRefusal(error) ? NOTHING_USED : undefined);
        throw error;
      }
      await call.settle(usageOf(result.usage));
      return result;
    },
    wrapStream: async ({ doStream, params, model }) => {
      const admission = await reserve(params, model);
      if (admission.kind === 'refused') return refusedStream(admission.message, admission.code);
      const { call } = admission;
      let result: StreamResult;
      try {
        result = await doStream();
      } catch (error) {
        await call.settle(isProviderRefusal(error) ? NOTHING_USED : undefined);
        throw error;
      }
      return { ...result, stream: settledWhenDone(result.stream, call) };
    },
  } as LanguageModelMiddleware;
}

/** The stream as it came, settled once it ends: at the usage of its `finish` part, or (none came) the full reservation. */
function settledWhenDone(stream: ReadableStream<StreamPart>, call: ReservedModelCall): ReadableStream<StreamPart> {
  const reader = stream.getReader();
  let usage: ModelCallUsage | undefined;
  return new ReadableStream<StreamPart>({
    async pull(controller) {
      let next: ReadableStreamReadResult<StreamPart>;
      try {
        next = await reader.read();
      } catch (error) {
        await call.settle(usage);
        controller.error(error);
        return;
      }
      if (next.done) {
        await call.settle(usage);
        controller.close();
        return;
      }
      const part = next.value as { type: string; usage?: Usage };
      if (part.type === 'finish' && part.usage) usage = usageOf(part.usage);
      controller.enqueue(next.value);
    },
    async cancel(reason) {
      // The reader stopped early (an abort, say): what the provider billed is unknown, so the reservation stands.
      await call.settle(usage);
      await reader.cancel(reason);
    },
  });
}

/** The runner's usage from the SDK's, or undefined when the provider reported no totals. */
export function usageOf(usage: Usage): ModelCallUsage | undefined {
  const input = usage.inputTokens.total;
  const output = usage.outputTokens.total;
  if (input === undefined || output === undefined) return undefined;
  const cached = usage.inputTokens.cacheRead;
  return { inputTokens: input, outputTokens: output, ...(cached ? { cachedInputTokens: cached } : {}) };
}

const noUsage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** The refusal as the model's answer: its text, finish reason `stop`, nothing used; the code in `providerMetadata.toolrunner`. */
function refusedAnswer(message: string, code: string): GenerateResult {
  return {
    content: [{ type: 'text', text: message }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: noUsage,
    providerMetadata: { toolrunner: { refused: code } },
    warnings: [],
  } as GenerateResult;
}

/** `refusedAnswer` as a stream. */
function refusedStream(message: string, code: string): StreamResult {
  const parts = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 'toolrunner-refusal' },
    { type: 'text-delta', id: 'toolrunner-refusal', delta: message },
    { type: 'text-end', id: 'toolrunner-refusal' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: noUsage, providerMetadata: { toolrunner: { refused: code } } },
  ] as StreamPart[];
  return {
    stream: new ReadableStream<StreamPart>({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    }),
  } as StreamResult;
}
