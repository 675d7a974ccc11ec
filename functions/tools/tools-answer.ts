import { checkArguments } from '../core/call-policy';
import { deepFreeze } from '../core/canonical';
import type { ToolRegistry } from '../core/tool-spec';
import {
  answerOfValue,
  type ArgumentsCheckSchema,
  crossError,
  describeTool,
  refusal,
  type ToolAnswer,
  type ToolDescription,
  ToolInvocationSchema,
  ToolsQuestionSchema,
} from '../core/tool-invocation';
import { callTool } from '../steps/tool-call';
import type { z } from 'zod';

/** What the `Tools` function answers: a tool's description, its check of a call's arguments, or an attempt's result. */
export type ToolsFunctionAnswer = ToolAnswer | { tools: ToolDescription[] } | z.infer<typeof ArgumentsCheckSchema>;

/**
 * The `Tools` function's answer to one event, over the tools module's registry. Kept apart from the handler,
 * which imports the tools module, so that the one answer can be asked in process too (the suite's isolated
 * door asks it exactly as the privileged functions do, through the Lambda invoke adapters).
 */
export async function answerToolsEvent(registry: ToolRegistry, event: unknown): Promise<ToolsFunctionAnswer> {
  const question = ToolsQuestionSchema.safeParse(event);
  if (question.success) {
    if (question.data.action === 'describe') return { tools: [...registry.values()].map(describeTool) };
    const tool = registry.get(question.data.tool);
    if (!tool) throw new Error(`tool ${question.data.tool} is not in this function's tools module`);
    return checkArguments(tool, JSON.parse(question.data.arguments));
  }
  // What this function refuses before any tool code runs is answered as a refusal, never thrown: a throw fails
  // the function as a whole, which the caller must take as "may have acted" (its tools and these may differ).
  const parsed = ToolInvocationSchema.safeParse(event);
  if (!parsed.success) return refusal('invalid_invocation', 'the tools function cannot read this invocation');
  const invocation = parsed.data;
  const tool = registry.get(invocation.tool);
  if (!tool) return refusal('unknown_tool', `tool ${invocation.tool} is not in this function's tools module`);
  if (invocation.action === 'reconcile' && !tool.reconcile) return refusal('no_reconcile', `tool ${invocation.tool} has no reconcile`);
  const args = parsedOrUndefined(invocation.arguments);
  const checked = args === undefined ? undefined : tool.inputSchema.safeParse(args);
  if (!checked?.success) return refusal('invalid_arguments', `the arguments do not match ${invocation.tool}'s input schema here`);
  const input = deepFreeze(checked.data);
  const call = await callTool(
    { now: Date.now },
    invocation.operationId,
    { idempotencyKey: invocation.idempotencyKey, attempt: invocation.attempt, timeoutMs: invocation.timeoutMs, abortOnCancel: false },
    (ctx) => (invocation.action === 'execute' ? tool.execute(ctx, input) : tool.reconcile!(ctx, input)),
  );
  return call.ok
    ? answerOfValue(call.value, call.upstreamStatus)
    : { ok: false, error: crossError(call.thrown), upstreamStatus: call.upstreamStatus };
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
