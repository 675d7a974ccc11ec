// biome-ignore-all lint/suspicious/noExplicitAny: the Agents SDK types its tools and results by the agent's context and output, which this adapter does not constrain.
import { run, tool, type Agent, type RunContext, type FunctionTool, type RunResult, type RunToolApprovalItem } from '@openai/agents';
import { modelText, RunnerSession, type RunnerTool, type ToolrunnerOptions } from './runner-tools';

/**
 * The runner's tools as OpenAI Agents SDK function tools. The SDK's tool call id becomes the runner's
 * callId, the model reads the envelope, the runner's approval policy drives the SDK's `needsApproval`,
 * and an approver's decision through the runner's link approves or rejects the SDK's interruption.
 */
export interface ToolrunnerAgents {
  runId: string;
  tools: FunctionTool<any, any, string>[];
  /** Waits for the runner's approvers on every interruption of `result` and records their decisions in its state. */
  settleApprovals(result: RunResult<any, any>): Promise<void>;
  /** `run()` until the agent finishes, waiting for approvers whenever the SDK stops for approval. */
  run(agent: Agent<any, any>, input: string): Promise<RunResult<any, any>>;
}

export async function toolrunnerAgents(options: ToolrunnerOptions): Promise<ToolrunnerAgents> {
  const session = await RunnerSession.open(options);
  const specs = await session.tools();
  const byName = new Map(specs.map((s) => [s.name, s]));

  const tools = specs.map((spec: RunnerTool) =>
    tool({
      name: spec.name,
      description: spec.description,
      parameters: spec.parameters as any,
      strict: spec.strict as any,
      needsApproval: (_context: unknown, input: unknown) => session.needsApproval(spec, input),
      execute: async (input: unknown, context?: RunContext, details?: { toolCall?: { callId?: string }; signal?: AbortSignal }) => {
        const callId = details?.toolCall?.callId;
        if (!callId) throw new Error('the Agents SDK gave no tool call id');
        // Each model request is a turn: usage counts them across interruptions and resumes.
        const turn = Math.max(1, context?.usage?.requests ?? 1);
        return modelText(await session.call(spec, callId, turn, input, details?.signal));
      },
    }),
  );

  async function settleApprovals(result: RunResult<any, any>): Promise<void> {
    const turn = Math.max(1, result.state.usage.requests);
    for (const item of result.interruptions as RunToolApprovalItem[]) {
      const spec = item.name ? byName.get(item.name) : undefined;
      const callId = (item.rawItem as { callId?: string }).callId;
      if (!spec || !callId) continue;
      const decision = await session.awaitDecision(spec, callId, turn, JSON.parse(item.arguments ?? '{}'));
      if (decision.approved) result.state.approve(item);
      else result.state.reject(item, { message: modelText(decision.result) });
    }
  }

  return {
    runId: session.runId,
    tools,
    settleApprovals,
    async run(agent, input) {
      let result = await run(agent, input);
      while (result.interruptions.length > 0) {
        await settleApprovals(result);
        result = await run(agent, result.state);
      }
      return result;
    },
  };
}
