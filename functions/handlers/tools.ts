import tools from 'toolrunner-user-tools';
import { checkArguments } from '../core/call-policy';
import { deepFreeze } from '../core/canonical';
import { makeRegistry } from '../core/tool-spec';
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
import { guardProcess } from './process-guard';
import type { z } from 'zod';

/**
 * The `Tools` Lambda: runs one tool's `execute` or `reconcile` for the function making the attempt, and
 * nothing else. It holds none of the runner's privileges (no tables, secret, topics, state machines or
 * bucket; only what `toolPolicies` grants), and imports none of the runner's adapters: a compromised tool
 * dependency here can neither decide an approval nor rewrite a record. The attempt's deadline holds here as in
 * the caller (the same `callTool`), so a tool that ignores its signal still answers a timeout.
 * It is also the only function that loads the tools module: the others ask it for the tools' description
 * (once per process) and, at validation, for what each tool's hooks say of a call's arguments.
 */
const registry = makeRegistry(tools);

export async function handler(event: unknown): Promise<ToolAnswer | { tools: ToolDescription[] } | z.infer<typeof ArgumentsCheckSchema>> {
  guardProcess();
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
