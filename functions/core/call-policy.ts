import { admitCall, reserveSpend } from './budgets';
import { canonicalJson, deepFreeze, hashValue, sha256, type ParsedArguments } from './canonical';
import type { Outcome, Principal, RunRecord } from './model';
import { mayCallTool } from './policy';
import { dropNullOptionals } from './provider-shapes';
import { needsApproval, type ToolSpec } from './tool-spec';

/** Frozen arguments over this size are refused: they would not fit one DynamoDB item beside the rest. */
export const MAX_FROZEN_BYTES = 128 * 1024;

type DenyOutcome = Extract<Outcome, { kind: 'rejected' | 'budget_exhausted' | 'cancelled' }>;

export type CallDecision =
  | {
      decision: 'deny';
      code: DenyOutcome['code'];
      message: string;
      /** What validation records for the operation. */
      outcome: DenyOutcome;
      /** The run as validation must write it (exhausted by this call, or unchanged). */
      run: RunRecord;
    }
  | {
      decision: 'allow' | 'require_approval';
      message: string;
      /** The validated arguments, deep-frozen: the only input any attempt sees. */
      value: unknown;
      frozenArguments: string;
      costCents: number;
      approvalRequired: boolean;
      /** The run with this call's spend reserved. */
      run: RunRecord;
    };

export interface CallPolicyInput {
  tool: ToolSpec | undefined;
  /** The caller's name for the tool, for the message when there is no such tool. */
  toolName: string;
  principal: Principal | undefined;
  arguments: ParsedArguments;
  run: RunRecord;
  now: number;
}

/**
 * The policy decision for one proposed call, as one pure function, so validation and the preview route
 * can never disagree. Checks run in a fixed order: unknown tool, authorization, arguments, spend budget,
 * approval policy; the first failing check decides.
 */
export function decideCall({ tool, toolName, principal, arguments: parsed, run, now }: CallPolicyInput): CallDecision {
  const deny = (outcome: DenyOutcome, after: RunRecord = run): CallDecision => ({ decision: 'deny', code: outcome.code, message: outcome.message, outcome, run: after });
  const reject = (code: Extract<Outcome, { kind: 'rejected' }>['code'], message: string) => deny({ kind: 'rejected', code, message });

  if (!tool) return reject('unknown_tool', `there is no tool named ${toolName}`);
  if (!mayCallTool(principal, tool.name)) return reject('forbidden', `this principal may not call ${tool.name}`);
  if (!parsed.ok) return reject('invalid_arguments', parsed.message);
  const checked = tool.inputSchema.safeParse(dropNullOptionals(tool.inputSchema, parsed.value));
  if (!checked.success) return reject('invalid_arguments', describeIssues(checked.error.issues));
  const frozenArguments = canonicalJson(checked.data);
  if (Buffer.byteLength(frozenArguments) > MAX_FROZEN_BYTES) return reject('invalid_arguments', 'arguments are larger than 128 KiB');

  const costCents = tool.costCents?.(checked.data) ?? 0;
  const spend = reserveSpend(run, costCents, now);
  if (!spend.admitted) {
    if (spend.reason === 'run_closed') return deny({ kind: 'cancelled', code: 'cancelled', message: 'the run was cancelled' });
    return deny({ kind: 'budget_exhausted', code: 'budget_exhausted', message: spend.message }, spend.run);
  }
  const approvalRequired = needsApproval(tool, checked.data);
  return {
    decision: approvalRequired ? 'require_approval' : 'allow',
    message: approvalRequired ? `a person must approve this ${tool.name} call before it runs` : `${tool.name} may run with these arguments`,
    value: deepFreeze(checked.data),
    frozenArguments,
    costCents,
    approvalRequired,
    run: spend.run,
  };
}

/**
 * Preview: what submitting this call now would decide, without creating anything. Adds the admission
 * check that submission makes before validation (turn and tool-call budgets, a closed run).
 */
export function previewCall(input: CallPolicyInput & { turn: number }): CallDecision {
  const admission = admitCall(input.run, input.turn, input.now);
  if (!admission.admitted) {
    if (admission.reason === 'run_closed') {
      return { decision: 'deny', code: 'cancelled', message: 'the run was cancelled', outcome: { kind: 'cancelled', code: 'cancelled', message: 'the run was cancelled' }, run: input.run };
    }
    const outcome = { kind: 'budget_exhausted', code: 'budget_exhausted', message: admission.message } as const;
    return { decision: 'deny', code: outcome.code, message: outcome.message, outcome, run: admission.run };
  }
  return decideCall({ ...input, run: admission.run });
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
