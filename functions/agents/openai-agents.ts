// biome-ignore-all lint/suspicious/noExplicitAny: the Agents SDK types its tools, states and results by the agent's context and output, which this adapter does not constrain.
import {
  getDefaultModel,
  OpenAIProvider,
  run,
  tool,
  RunState,
  Usage,
  type Agent,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
  type RunContext,
  type FunctionTool,
  type RunResult,
  type RunToolApprovalItem,
} from '@openai/agents';
import type { Operation } from '../client';
import {
  modelText,
  RunnerSession,
  runnerDecision,
  type ModelVisibleResult,
  type PendingApproval,
  type RunnerDecision,
  type RunnerTool,
  type ToolrunnerOptions,
} from './runner-tools';
import {
  DEFAULT_MAX_OUTPUT_TOKENS,
  isProviderRefusal,
  NOTHING_USED,
  requestBytes,
  reserveModelCall,
  type ModelCallUsage,
  type ModelSpendClient,
  type ModelSpendOptions,
} from './model-spend';

export { runnerDecision, type ModelVisibleResult, type PendingApproval, type RunnerDecision, type ToolrunnerOptions };
export type { ModelSpendClient, ModelSpendOptions };

/**
 * The runner's tools as OpenAI Agents SDK function tools. The SDK's tool call id becomes the runner's callId
 * and the model reads the envelope. A call the runner's policy holds for a person becomes the SDK's own pause:
 * `needsApproval` says yes (the call already waits at the runner for its approver), the run stops with an
 * interruption, its `RunState` can be saved (`result.state.toString()`), and the approver's decision at the
 * runner approves or rejects the interruption when the run resumes, here or in another process (`restore`).
 */
export interface ToolrunnerAgents {
  runId: string;
  tools: FunctionTool<any, any, string>[];
  /** The interruptions of `source` that still wait for a person at the runner, each with its operation. */
  pendingApprovals(source: RunResult<any, any> | RunState<any, any>): Promise<PendingApproval[]>;
  /**
   * Applies the runner's decisions, read now (never waiting), to the interruptions of `state`: approved calls
   * run when the state runs again (the runner's result, never a second execution), rejected, expired or cancelled
   * ones reach the model with the runner's envelope. Returns the interruptions still waiting: resume when empty.
   */
  applyDecisions(state: RunState<any, any>): Promise<PendingApproval[]>;
  /**
   * Rebuilds a state saved with `result.state.toString()` (a new process needs only the string, the agent and
   * this adapter on the same run) and applies the runner's decisions to it; `run(agent, state)` resumes it
   * once `pending` is empty.
   */
  restore<A extends Agent<any, any>>(agent: A, saved: string): Promise<{ state: RunState<any, A>; pending: PendingApproval[] }>;
  /** Waits for the runner's approvers on every interruption of `result` (up to `approvalTimeoutMs`) and applies their decisions. */
  settleApprovals(result: RunResult<any, any>): Promise<void>;
  /**
   * A model provider whose models reserve every call at the runner before it runs and settle it with the
   * usage after (`run(agent, input, { modelProvider })` or `new Runner({ modelProvider })`; default `base`:
   * `OpenAIProvider`). A call the runner refuses (the cap reached) answers the refusal as the assistant's
   * message, so the run ends with it as its final output. The SDK asks the provider only for model names: an
   * agent given a `Model` object needs `wrapModel`.
   */
  modelProvider(base?: ModelProvider, options?: AgentsModelSpendOptions): ModelProvider;
  /** `model` (named `name` at its provider, e.g. `gpt-4.1`) reserving and settling each call as `modelProvider`'s models do. */
  wrapModel(model: Model, name: string, options?: AgentsModelSpendOptions): Model;
  /** `run()` until the agent finishes, waiting in process for approvers whenever the SDK stops for approval. */
  run(agent: Agent<any, any>, input: string): Promise<RunResult<any, any>>;
}

/**
 * Applies the runner's decision in `operation` to one interruption of `state`: approve, reject with the envelope
 * as the text the model reads, or (nobody decided yet) leave it waiting. Returns what it did.
 */
export function applyRunnerDecision(state: RunState<any, any>, item: RunToolApprovalItem, operation: Operation): RunnerDecision['status'] {
  return apply(state, item, runnerDecision(operation));
}

function apply(state: RunState<any, any>, item: RunToolApprovalItem, decision: RunnerDecision): RunnerDecision['status'] {
  // Undecided: through to the runner, which still holds the call; the model reads its pending answer.
  if (decision.status === 'approved' || decision.status === 'undecided') state.approve(item);
  else if (decision.status === 'denied') state.reject(item, { message: modelText(decision.result) });
  return decision.status;
}

/** The SDK's tool call id of an interruption (function calls carry one). */
function callIdOf(item: RunToolApprovalItem): string | undefined {
  return (item.rawItem as { callId?: string }).callId;
}

/** Opens a run (or joins `options.runId`) and gives its tools to the OpenAI Agents SDK; see `ToolrunnerAgents`. */
export async function toolrunnerAgents(options: ToolrunnerOptions): Promise<ToolrunnerAgents> {
  const session = await RunnerSession.open(options);
  const specs = await session.tools();
  const byName = new Map(specs.map((s) => [s.name, s]));
  // Each model request is a turn: usage counts them across interruptions and resumes.
  const turnOf = (context: RunContext | undefined) => Math.max(1, context?.usage?.requests ?? 1);

  const tools = specs.map((spec: RunnerTool) =>
    tool({
      name: spec.name,
      description: spec.description,
      parameters: spec.parameters as any,
      strict: spec.strict as any,
      needsApproval: async (context: RunContext, input: unknown, callId?: string) => {
        if (!callId) throw new Error('the Agents SDK gave no tool call id');
        return session.needsApproval(spec, callId, turnOf(context), input);
      },
      execute: async (input: unknown, context?: RunContext, details?: { toolCall?: { callId?: string }; signal?: AbortSignal }) => {
        const callId = details?.toolCall?.callId;
        if (!callId) throw new Error('the Agents SDK gave no tool call id');
        return modelText(await session.call(spec, callId, turnOf(context), input, details?.signal));
      },
    }),
  );

  /** This adapter's interruptions of a state: function calls of the runner's tools. */
  const ours = (state: RunState<any, any>) =>
    state.getInterruptions().flatMap((item) => {
      const callId = callIdOf(item);
      const spec = item.name ? byName.get(item.name) : undefined;
      return spec && callId ? [{ item, callId, spec }] : [];
    });
  const stateOf = (source: RunResult<any, any> | RunState<any, any>): RunState<any, any> =>
    'getInterruptions' in source ? source : source.state;

  async function applyDecisions(state: RunState<any, any>): Promise<PendingApproval[]> {
    const waiting: PendingApproval[] = [];
    for (const { item, callId, spec } of ours(state)) {
      if (apply(state, item, await session.readDecision(callId)) === 'pending')
        waiting.push({ callId, toolName: spec.name, operationId: session.operationIdOf(callId) });
    }
    return waiting;
  }

  async function settleApprovals(result: RunResult<any, any>): Promise<void> {
    const turn = Math.max(1, result.state.usage.requests);
    for (const { item, callId, spec } of ours(result.state))
      apply(result.state, item, await session.awaitDecision(spec, callId, turn, JSON.parse(item.arguments ?? '{}')));
  }

  return {
    runId: session.runId,
    tools,
    async pendingApprovals(source) {
      const waiting: PendingApproval[] = [];
      for (const { callId, spec } of ours(stateOf(source)))
        if ((await session.readDecision(callId)).status === 'pending')
          waiting.push({ callId, toolName: spec.name, operationId: session.operationIdOf(callId) });
      return waiting;
    },
    applyDecisions,
    async restore(agent, saved) {
      const state = await RunState.fromString<any, typeof agent>(agent, saved);
      return { state, pending: await applyDecisions(state) };
    },
    settleApprovals,
    modelProvider: (base, modelOptions) => modelSpendProvider(base ?? new OpenAIProvider(), session.client, session.runId, modelOptions),
    wrapModel: (model, name, modelOptions) => modelSpendModel(model, name, session.client, session.runId, modelOptions),
    async run(agent, input) {
      let result = await run(agent, input);
      // Interruptions of other tools are the caller's to settle: the result carries them.
      while (result.interruptions.length > 0 && ours(result.state).length > 0) {
        await settleApprovals(result);
        result = await run(agent, result.state);
      }
      return result;
    },
  };
}

/** As `ModelSpendOptions`, with the provider the model names belong to (the runner's provider id; default `openai`). */
export interface AgentsModelSpendOptions extends ModelSpendOptions {
  provider?: string;
}

/** `<provider>/<model>` for a model name of the Agents SDK: one that already names its provider is kept. */
export function agentsModelId(name: string, provider = 'openai'): string {
  return name.includes('/') ? name : `${provider}/${name}`;
}

/** `base` with each of its models reserving and settling its calls at the runner (see `ToolrunnerAgents.modelProvider`). */
export function modelSpendProvider(
  base: ModelProvider,
  client: ModelSpendClient,
  runId: string,
  options: AgentsModelSpendOptions = {},
): ModelProvider {
  return {
    async getModel(name?: string) {
      const resolved = name ?? getDefaultModel();
      return modelSpendModel(await base.getModel(name), resolved, client, runId, options);
    },
  };
}

/** `model` reserving each call at the runner before it runs and settling it with the usage after. */
export function modelSpendModel(
  model: Model,
  name: string,
  client: ModelSpendClient,
  runId: string,
  options: AgentsModelSpendOptions = {},
): Model {
  const estimate = options.estimateInputTokens ?? requestBytes;
  const prepare = async (request: ModelRequest) => {
    const maxOutputTokens = request.modelSettings.maxTokens ?? options.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
    const { systemInstructions, input, tools, handoffs, outputType } = request;
    const admission = await reserveModelCall(client, runId, {
      model: options.model ?? agentsModelId(name, options.provider),
      maxOutputTokens,
      inputTokens: estimate({ systemInstructions, input, tools, handoffs, outputType }),
    });
    // The model is held to what was reserved for its answer.
    return { admission, request: { ...request, modelSettings: { ...request.modelSettings, maxTokens: maxOutputTokens } } };
  };
  const wrapped: Model = {
    async getResponse(request) {
      const { admission, request: held } = await prepare(request);
      if (admission.kind === 'refused') return refusedResponse(admission.message, admission.code);
      let response: ModelResponse;
      try {
        response = await model.getResponse(held);
      } catch (error) {
        await admission.call.settle(isProviderRefusal(error) ? NOTHING_USED : undefined);
        throw error;
      }
      await admission.call.settle(agentsUsageOf(response.usage));
      return response;
    },
    async *getStreamedResponse(request) {
      const { admission, request: held } = await prepare(request);
      if (admission.kind === 'refused') {
        const response = refusedResponse(admission.message, admission.code);
        yield { type: 'response_started' } as StreamEvent;
        yield { type: 'output_text_delta', delta: admission.message } as StreamEvent;
        yield {
          type: 'response_done',
          response: { id: 'toolrunner-refused', usage: usageData(response.usage), output: response.output },
        } as StreamEvent;
        return;
      }
      let usage: ModelCallUsage | undefined;
      let failure: unknown;
      try {
        for await (const event of model.getStreamedResponse(held)) {
          if (event.type === 'response_done') usage = agentsUsageOf(event.response.usage);
          yield event;
        }
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        // Also when the reader stops early: without the provider's usage the reservation stands.
        await admission.call.settle(usage ?? (failure !== undefined && isProviderRefusal(failure) ? NOTHING_USED : undefined));
      }
    },
  };
  if (model.getRetryAdvice) wrapped.getRetryAdvice = (args) => model.getRetryAdvice!(args);
  return wrapped;
}

/** The runner's usage from the SDK's: undefined when the provider reported none (nothing in, nothing out). */
export function agentsUsageOf(
  usage: Pick<Usage, 'inputTokens' | 'outputTokens'> & { inputTokensDetails?: unknown },
): ModelCallUsage | undefined {
  if (!usage || (usage.inputTokens === 0 && usage.outputTokens === 0)) return undefined;
  const details = usage.inputTokensDetails;
  const entries = (Array.isArray(details) ? details : details ? [details] : []) as Record<string, number>[];
  const cached = entries.reduce((sum, d) => sum + (d.cached_tokens ?? 0), 0);
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, ...(cached ? { cachedInputTokens: cached } : {}) };
}

function usageData(usage: Usage) {
  return { requests: usage.requests, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, totalTokens: usage.totalTokens };
}

/** The refusal as the model's answer: one completed assistant message holding its text (the code in `providerData`). */
function refusedResponse(message: string, code: string): ModelResponse {
  return {
    usage: new Usage({ requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }),
    output: [
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: message }],
        providerData: { toolrunner: { refused: code } },
      },
    ],
  };
}
