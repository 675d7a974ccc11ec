import { canonicalJson, parseArguments } from './canonical';
import type { Validation } from './engine';
import type { Outcome, Principal } from './model';
import { mayCallTool } from './policy';
import { deadlineSecondsOf, needsApproval, type ToolSpec } from './tool-spec';

const MAX_FROZEN_BYTES = 128 * 1024;

export interface CallToValidate {
  toolName: string;
  tool: ToolSpec | undefined;
  /** The principal who calls (not necessarily the run's owner). */
  principal: Principal | undefined;
  rawArguments: unknown;
  approvalTtlSeconds: number;
  now: number;
}

/**
 * The policy decision for one proposed call, in a fixed order: unknown tool, authorization, arguments,
 * approval policy. Pure: validation at submission and the policy preview both call this and nothing else.
 * Budgets are checked by the run's admission (budgets.ts), which needs the cost computed here.
 */
export function validateCall(call: CallToValidate): Validation {
  const deny = (code: Extract<Outcome, { kind: 'rejected' }>['code'], message: string): Validation => ({
    decision: 'deny',
    outcome: { kind: 'rejected', code, message },
    detail: { decision: 'deny', code },
  });
  const { tool } = call;
  if (!tool) return deny('unknown_tool', `there is no tool named ${call.toolName}`);
  if (!mayCallTool(call.principal, tool.name)) return deny('forbidden', `this principal may not call ${tool.name}`);
  const parsed = parseArguments(call.rawArguments);
  if (!parsed.ok) return deny('invalid_arguments', parsed.message);
  const checked = tool.inputSchema.safeParse(parsed.value);
  if (!checked.success) return deny('invalid_arguments', describeIssues(checked.error.issues));
  const frozenArguments = canonicalJson(checked.data);
  if (Buffer.byteLength(frozenArguments) > MAX_FROZEN_BYTES) return deny('invalid_arguments', 'arguments are larger than 128 KiB');
  const costCents = tool.costCents?.(checked.data) ?? 0;
  const approvalRequired = needsApproval(tool, checked.data);
  const deadlineMs = deadlineSecondsOf(tool) * 1000 + (approvalRequired ? call.approvalTtlSeconds * 1000 : 0);
  return {
    decision: 'allow',
    risk: tool.risk,
    frozenArguments,
    costCents,
    approvalRequired,
    deadlineAt: new Date(call.now + deadlineMs).toISOString(),
    detail: { decision: 'allow', approval: approvalRequired ? 'required' : 'not_required', risk: tool.risk, costCents },
  };
}

/** Zod issues as one line the model can act on; never echoes argument values. */
function describeIssues(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : 'arguments'}: ${i.message}`)
    .join('; ');
}
