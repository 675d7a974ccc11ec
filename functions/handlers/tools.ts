import tools from 'toolrunner-user-tools';
import { checkArguments } from '../core/call-policy';
import { deepFreeze } from '../core/canonical';
import { makeRegistry } from '../core/tool-spec';
import {
  type ArgumentsCheckSchema,
  crossError,
  describeTool,
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
  const invocation = ToolInvocationSchema.parse(event);
  const tool = registry.get(invocation.tool);
  if (!tool) throw new Error(`tool ${invocation.tool} is not in this function's tools module`);
  if (invocation.action === 'reconcile' && !tool.reconcile) throw new Error(`tool ${invocation.tool} has no reconcile`);
  const input = deepFreeze(tool.inputSchema.parse(JSON.parse(invocation.arguments)));
  const call = await callTool(
    { now: Date.now },
    invocation.operationId,
    { idempotencyKey: invocation.idempotencyKey, attempt: invocation.attempt, timeoutMs: invocation.timeoutMs, abortOnCancel: false },
    (ctx) => (invocation.action === 'execute' ? tool.execute(ctx, input) : tool.reconcile!(ctx, input)),
  );
  return call.ok
    ? { ok: true, value: call.value, upstreamStatus: call.upstreamStatus }
    : { ok: false, error: crossError(call.thrown), upstreamStatus: call.upstreamStatus };
}
