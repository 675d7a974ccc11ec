import { generateText, jsonSchema, stepCountIs, tool, type ModelMessage, type Tool, type ToolApprovalResponse } from 'ai';
import { RunnerSession, modelText, type RunnerTool, type ToolrunnerOptions } from './runner-tools';

/**
 * The runner's tools as Vercel AI SDK tools. The SDK's toolCallId becomes the runner's callId, the model
 * reads the envelope, the runner's approval policy drives the SDK's `needsApproval`, and an approver's
 * decision through the runner's link becomes the SDK's tool-approval-response.
 */
export interface ToolrunnerAiSdk {
  runId: string;
  tools: Record<string, Tool>;
  /** Waits for the runner's approvers on every approval request of `result`; the tool message that answers them. */
  settleApprovals(result: { content: ReadonlyArray<{ type: string }> }, turn?: number): Promise<ModelMessage | undefined>;
  /** `generateText` (default: up to 20 steps) until no approval is pending, answering each approval request with the runner's decision. */
  generate(options: GenerateOptions): Promise<Awaited<ReturnType<typeof generateText>>>;
}

type GenerateOptions = Omit<Parameters<typeof generateText>[0], 'tools' | 'prompt' | 'messages'> & {
  prompt?: string;
  messages?: ModelMessage[];
};

interface ApprovalRequestPart {
  type: 'tool-approval-request';
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

export async function toolrunnerAiSdk(options: ToolrunnerOptions): Promise<ToolrunnerAiSdk> {
  const session = await RunnerSession.open(options);
  const specs = await session.tools();
  const byName = new Map(specs.map((s) => [s.name, s]));
  // The turn of a call: model responses so far in the conversation that led to it.
  const turnOf = (messages: ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length + 1;

  const tools: Record<string, Tool> = Object.fromEntries(
    specs.map((spec: RunnerTool) => [
      spec.name,
      tool({
        description: spec.description,
        inputSchema: jsonSchema<Record<string, unknown>>(spec.parameters),
        strict: spec.strict,
        needsApproval: (input) => session.needsApproval(spec, input),
        // The model reads the envelope (or the runner's refusal) as the tool's JSON output.
        execute: (input, { toolCallId, messages, abortSignal }) => session.call(spec, toolCallId, turnOf(messages), input, abortSignal),
      }),
    ]),
  );

  async function settleApprovals(result: { content: ReadonlyArray<{ type: string }> }, turn = 1): Promise<ModelMessage | undefined> {
    const requests = result.content.filter((p): p is ApprovalRequestPart => p.type === 'tool-approval-request');
    if (requests.length === 0) return undefined;
    const answers: ToolApprovalResponse[] = [];
    for (const request of requests) {
      const spec = byName.get(request.toolCall.toolName);
      if (!spec) continue;
      const decision = await session.awaitDecision(spec, request.toolCall.toolCallId, turn, request.toolCall.input);
      // A denial's reason is what the model reads: the runner's envelope.
      answers.push(
        decision.approved
          ? { type: 'tool-approval-response', approvalId: request.approvalId, approved: true }
          : { type: 'tool-approval-response', approvalId: request.approvalId, approved: false, reason: modelText(decision.result) },
      );
    }
    return { role: 'tool', content: answers };
  }

  return {
    runId: session.runId,
    tools,
    settleApprovals,
    async generate({ prompt, messages: given, ...rest }) {
      let messages: ModelMessage[] = given ?? [{ role: 'user', content: prompt ?? '' }];
      for (;;) {
        const result = await generateText({ stopWhen: stepCountIs(20), ...rest, tools, messages } as Parameters<typeof generateText>[0]);
        const answer = await settleApprovals(result, turnOf([...messages, ...result.response.messages]) - 1);
        if (!answer) return result;
        messages = [...messages, ...result.response.messages, answer];
      }
    },
  };
}
