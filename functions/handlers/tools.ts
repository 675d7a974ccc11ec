import tools from 'toolrunner-user-tools';
import { makeRegistry } from '../core/tool-spec';
import { answerToolsEvent, type ToolsFunctionAnswer } from '../tools/tools-answer';
import { guardProcess } from './process-guard';

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

export async function handler(event: unknown): Promise<ToolsFunctionAnswer> {
  guardProcess();
  return answerToolsEvent(registry, event);
}
