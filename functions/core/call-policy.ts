import { admitCall } from './budgets';
import { canonicalJson, deepFreeze, hashValue, sha256, type ParsedArguments } from './canonical';
import type { Validation } from './lifecycle-events';
import type { Outcome, Principal, RunRecord } from './model';
import { mayCallTool } from './policy';
import { dropNullOptionals } from './provider-shapes';
import { deadlineSecondsOf, needsApproval, type ToolSpec } from './tool-spec';

/** Frozen arguments over this size are refused: they would not fit one DynamoDB item beside the rest. */
export const MAX_FROZEN_BYTES = 128 * 1024;

type DenyOutcome = Extract<Outcome, { kind: 'rejected' | 'budget_exhausted' | 'cancelled' }>;

export type CallDecision =
  | { decision: 'deny'; code: DenyOutcome['code']; message: string; outcome: DenyOutcome }
  | {
      decision: 'allow' | 'require_approval';
      message: string;
      /** The validated arguments, deep-frozen: the only input any attempt sees. */
      value: unknown;
      frozenArguments: string;
      costCents: number;
      approvalRequired: boolean;
      risk: ToolSpec['risk'];
      /** When the whole operation must end: its tool's deadline, plus the approval's time to live if it needs one. */
      deadlineAt: string;
    };

export interface CallPolicyInput {
  tool: ToolSpec | undefined;
  /** The caller's name for the tool, for the message when there is no such tool. */
  toolName: string;
  /** The principal who calls (not necessarily the run's owner). */
  principal: Principal | undefined;
  arguments: ParsedArguments;
  approvalTtlSeconds: number;
  now: number;
}

/**
 * The policy decision for one proposed call, as one pure function, so submission and the preview route
 * can never disagree. Checks run in a fixed order: unknown tool, authorization, arguments, approval
 * policy; the first failing check decides. Budgets are the run's admission (budgets.ts), which needs the
 * cost computed here.
 */
export function decideCall({ tool, toolName, principal, arguments: parsed, approvalTtlSeconds, now }: CallPolicyInput): CallDecision {
  const reject = (code: Extract<Outcome, { kind: 'rejected' }>['code'], message: string): CallDecision => ({
    decision: 'deny',
    code,
    message,
    outcome: { kind: 'rejected', code, message },
  });
  if (!tool) return reject('unknown_tool', `there is no tool named ${toolName}`);
  if (!mayCallTool(principal, tool.name)) return reject('forbidden', `this principal may not call ${tool.name}`);
  if (!parsed.ok) return reject('invalid_arguments', parsed.message);
  // A strict-mode model sends null for an optional field it leaves out; that null means "absent".
  const checked = tool.inputSchema.safeParse(dropNullOptionals(tool.inputSchema, parsed.value));
  if (!checked.success) return reject('invalid_arguments', describeIssues(checked.error.issues));
  const frozenArguments = canonicalJson(checked.data);
  if (Buffer.byteLength(frozenArguments) > MAX_FROZEN_BYTES) return reject('invalid_arguments', 'arguments are larger than 128 KiB');
  const approvalRequired = needsApproval(tool, checked.data);
  const deadlineMs = deadlineSecondsOf(tool) * 1000 + (approvalRequired ? approvalTtlSeconds * 1000 : 0);
  return {
    decision: approvalRequired ? 'require_approval' : 'allow',
    message: approvalRequired ? `a person must approve this ${tool.name} call before it runs` : `${tool.name} may run with these arguments`,
    value: deepFreeze(checked.data),
    frozenArguments,
    costCents: tool.costCents?.(checked.data) ?? 0,
    approvalRequired,
    risk: tool.risk,
    deadlineAt: new Date(now + deadlineMs).toISOString(),
  };
}

/** The decision as the lifecycle engine records it (its `validate` event). */
export function validationOf(decision: CallDecision): Validation {
  if (decision.decision === 'deny')
    return { decision: 'deny', outcome: decision.outcome, detail: { decision: 'deny', code: decision.code } };
  const { risk, frozenArguments, costCents, approvalRequired, deadlineAt } = decision;
  return {
    decision: 'allow',
    risk,
    frozenArguments,
    costCents,
    approvalRequired,
    deadlineAt,
    detail: { decision: 'allow', approval: approvalRequired ? 'required' : 'not_required', risk, costCents },
  };
}

/**
 * Preview: what submitting this call now would decide, without creating anything: the policy decision,
 * then the run's admission (a closed run, the turn, tool-call and spend budgets).
 */
export function previewCall(input: CallPolicyInput & { run: RunRecord; turn: number }): CallDecision {
  const decided = decideCall(input);
  if (decided.decision === 'deny') return decided;
  const admission = admitCall(input.run, input.turn, decided.costCents, input.now);
  if (admission.admitted) return decided;
  if (admission.reason === 'run_closed')
    return {
      decision: 'deny',
      code: 'cancelled',
      message: 'the run was cancelled',
      outcome: { kind: 'cancelled', code: 'cancelled', message: 'the run was cancelled' },
    };
  return {
    decision: 'deny',
    code: 'budget_exhausted',
    message: admission.message,
    outcome: { kind: 'budget_exhausted', code: 'budget_exhausted', message: admission.message },
  };
}

/** The hash submission records as the operation's inputHash: equal values hash equally as object or JSON string. */
export function argumentsHash(parsed: ParsedArguments, raw: unknown): string {
  return parsed.ok ? hashValue(parsed.value) : sha256(String(raw));
}

/** Zod issues as one line the model can act on; never echoes argument values. */
export function describeIssues(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : 'arguments'}: ${i.message}`)
    .join('; ');
}
