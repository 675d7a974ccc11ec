import { admitCall, frozenCallKey } from './budgets';
import { canonicalJson, deepFreeze, hashValue, sha256, type ParsedArguments } from './canonical';
import type { Validation } from './lifecycle-events';
import type { Outcome, PolicyIds, Principal, RunRecord, ShadowDecision } from './model';
import { mayCallTool } from './policy';
import { type PolicyAnswer, type PolicyEvaluator, type PolicyRequest, runFactsOf } from './policy-schema';
import { dropNullOptionals } from './provider-shapes';
import { deadlineSecondsOf, needsApproval, type ToolSpec } from './tool-spec';

/** Frozen arguments over this size are refused: they would not fit one DynamoDB item beside the rest. */
export const MAX_FROZEN_BYTES = 128 * 1024;

type DenyOutcome = Extract<Outcome, { kind: 'rejected' | 'budget_exhausted' | 'cancelled' }>;

export type CallDecision =
  | { decision: 'deny'; code: DenyOutcome['code']; message: string; outcome: DenyOutcome; policies?: PolicyIds; shadow?: ShadowDecision }
  | {
      decision: 'allow' | 'require_approval';
      message: string;
      /** The validated arguments, deep-frozen: the only input any attempt sees. */
      value: unknown;
      frozenArguments: string;
      costCents: number;
      approvalRequired: boolean;
      risk: ToolSpec['risk'];
      /** The resource lock the call takes (`<tool>:<lockKey>`), answered with the arguments' check. */
      lockKey?: string;
      /** The tool's `describeForApproval` lines for these arguments. */
      approvalLines: string[];
      /** The tool's `secretFields`, kept where a person is asked (functions that notify never load the tools). */
      secretFields?: string[];
      /** When the whole operation must end: its tool's deadline, plus the approval's time to live if it needs one. */
      deadlineAt: string;
      /** Where configured policies decided: the determining policy ids of each action. */
      policies?: PolicyIds;
      /** What `@mode("log_only")` policies would have decided, where they took part. */
      shadow?: ShadowDecision;
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
  /** The configured policies; without them the principal's roles and tool list decide alone (the built-in policy). */
  policy?: PolicyEvaluator;
  /** The run before this call (`context.run`); a preview or submission always has it. */
  run?: Pick<RunRecord, 'usage' | 'createdAt'>;
  /**
   * The tool's own answers for these arguments, asked where the tool's code runs (the `Tools` function);
   * without it they are computed here from the tool's hooks (tools in this process).
   */
  checked?: ArgumentsCheck;
}

/**
 * What a tool's own code says about one call's arguments: parsed by its schema, then its hooks (`costCents`,
 * `approval`, `lockKey`, `describeForApproval`). Asked once, at validation, and stored with the operation:
 * where tools are isolated this runs in the `Tools` function, never with the runner's keys.
 */
export type ArgumentsCheck =
  | { ok: true; value: unknown; costCents: number; approval: boolean; lockKey?: string; approvalLines: string[] }
  | { ok: false; message: string };

export function checkArguments(tool: ToolSpec, value: unknown): ArgumentsCheck {
  // A strict-mode model sends null for an optional field it leaves out; that null means "absent".
  const checked = tool.inputSchema.safeParse(dropNullOptionals(tool.inputSchema, value));
  if (!checked.success) return { ok: false, message: describeIssues(checked.error.issues) };
  const input = checked.data;
  return {
    ok: true,
    value: input,
    costCents: tool.costCents?.(input) ?? 0,
    approval: needsApproval(tool, input),
    ...(tool.lockKey ? { lockKey: `${tool.name}:${tool.lockKey(input)}` } : {}),
    approvalLines: approvalLinesOf(tool, input),
  };
}

/** `describeForApproval`'s lines; a failing hook shows none rather than refusing the call. */
function approvalLinesOf(tool: ToolSpec, input: unknown): string[] {
  if (!tool.describeForApproval) return [];
  try {
    return tool.describeForApproval(input).map(String);
  } catch {
    return [];
  }
}

/**
 * The policy decision for one proposed call, as one pure function, so submission and the preview route
 * can never disagree. Checks run in a fixed order: unknown tool, authorization, arguments, approval
 * policy; the first failing check decides. Budgets are the run's admission (budgets.ts), which needs the
 * cost computed here.
 */
export function decideCall(input: CallPolicyInput): CallDecision {
  const { tool, toolName, principal, arguments: parsed, approvalTtlSeconds, now } = input;
  const reject = (code: Extract<Outcome, { kind: 'rejected' }>['code'], message: string, policies?: PolicyIds): CallDecision => ({
    decision: 'deny',
    code,
    message,
    outcome: { kind: 'rejected', code, message },
    ...(policies ? { policies } : {}),
  });
  if (!tool) return reject('unknown_tool', `there is no tool named ${toolName}`);
  // The roles and tool list stay the outer bound: policies decide within them, never beyond.
  if (!mayCallTool(principal, tool.name)) return reject('forbidden', `this principal may not call ${tool.name}`);
  if (!parsed.ok) return reject('invalid_arguments', parsed.message);
  const checked = input.checked ?? checkArguments(tool, parsed.value);
  if (!checked.ok) return reject('invalid_arguments', checked.message);
  const frozenArguments = canonicalJson(checked.value);
  if (Buffer.byteLength(frozenArguments) > MAX_FROZEN_BYTES) return reject('invalid_arguments', 'arguments are larger than 128 KiB');
  const specApproval = checked.approval;
  const ruled =
    input.policy && principal
      ? applyPolicies(input.policy, { principal, tool, input: checked.value, run: runFactsOf(input.run, now), now }, specApproval)
      : undefined;
  if (ruled) {
    // A value the policies cannot see exactly is the arguments' fault (the unattended action sees the same input).
    const misfit = ruled.call.unrepresentable;
    if (misfit?.in === 'input') return reject('invalid_arguments', `${misfit.path || 'arguments'}: ${misfit.reason}`);
    // An error on the unattended question refuses the call too: a policy that could apply is never skipped.
    const refused = !ruled.call.allowed ? ruled.call : ruled.unattended?.errors ? ruled.unattended : undefined;
    if (refused)
      return {
        ...reject('forbidden', refusalMessage(tool.name, refused), ruled.ids),
        ...(ruled.shadow ? { shadow: ruled.shadow } : {}),
      };
  }
  const approvalRequired = specApproval || (ruled !== undefined && !ruled.unattended?.allowed);
  const deadlineMs = deadlineSecondsOf(tool) * 1000 + (approvalRequired ? approvalTtlSeconds * 1000 : 0);
  return {
    decision: approvalRequired ? 'require_approval' : 'allow',
    message: approvalRequired ? `a person must approve this ${tool.name} call before it runs` : `${tool.name} may run with these arguments`,
    value: deepFreeze(checked.value),
    frozenArguments,
    costCents: checked.costCents,
    approvalRequired,
    risk: tool.risk,
    ...(checked.lockKey === undefined ? {} : { lockKey: checked.lockKey }),
    approvalLines: checked.approvalLines,
    ...(approvalRequired ? { secretFields: [...(tool.secretFields ?? [])] } : {}),
    deadlineAt: new Date(now + deadlineMs).toISOString(),
    ...(ruled ? { policies: ruled.ids } : {}),
    ...(ruled?.shadow ? { shadow: ruled.shadow } : {}),
  };
}

/**
 * Both questions a call puts to the policies: may it be called, and may it run unattended (asked only where the
 * tool itself does not already require a person: policies add approvals, never waive one).
 */
function applyPolicies(policy: PolicyEvaluator, request: Omit<PolicyRequest, 'action'>, specApproval: boolean) {
  const call = policy.evaluate({ ...request, action: 'call' });
  const unattended = call.allowed && !specApproval ? policy.evaluate({ ...request, action: 'unattended' }) : undefined;
  const ids: PolicyIds = unattended ? { call: call.determining, unattended: unattended.determining } : { call: call.determining };
  return { call, unattended, ids, shadow: shadowOf(call, unattended, specApproval) };
}

function shadowOf(call: PolicyAnswer, unattended: PolicyAnswer | undefined, specApproval: boolean): ShadowDecision | undefined {
  if (!call.shadow && !unattended?.shadow) return undefined;
  const callWould = call.shadow ?? call;
  // Where the enforced policies denied the call, its unattended action was never asked: it would have been.
  const unattendedWould = unattended?.shadow ?? unattended;
  const decision =
    !callWould.allowed || unattendedWould?.errors ? 'deny' : specApproval || !unattendedWould?.allowed ? 'require_approval' : 'allow';
  const policies = [...new Set([...(call.shadow?.determining ?? []), ...(unattended?.shadow?.determining ?? [])])].sort();
  return { decision, policies };
}

function refusalMessage(toolName: string, answer: PolicyAnswer, may = 'may not'): string {
  return `this principal ${may} call ${toolName}: ${refusalReason(answer)}`;
}

function refusalReason({ determining, errors, unrepresentable }: PolicyAnswer): string {
  if (unrepresentable) {
    const { in: where, path, reason } = unrepresentable;
    return `${where === 'input' ? path || 'arguments' : `principal.${path}`}: ${reason}`;
  }
  const failed = (errors ?? []).filter((e) => e.policyId === undefined || determining.includes(e.policyId));
  if (failed.length > 0)
    return failed
      .map((e) =>
        e.policyId === undefined
          ? `the policies could not be evaluated: ${e.reason}`
          : `"${e.policyId}" could not be evaluated: ${e.reason}`,
      )
      .join('; ');
  return determining.length > 0 ? `forbidden by ${determining.map((id) => `"${id}"`).join(', ')}` : 'no policy permits it';
}

/**
 * The check before each attempt: may the call still go on, with `run` and `now` as they are at that moment?
 * The roles and tool list, then the policies' tool action again (a person's approval is not asked twice).
 */
export function recheckCall(input: {
  tool: ToolSpec;
  principal: Principal | undefined;
  frozenInput: unknown;
  run: Pick<RunRecord, 'usage' | 'createdAt'> | undefined;
  now: number;
  policy?: PolicyEvaluator;
}): { allowed: true } | { allowed: false; message: string; policies?: string[] } {
  const { tool, principal } = input;
  if (!mayCallTool(principal, tool.name)) return { allowed: false, message: `this principal may no longer call ${tool.name}` };
  if (!input.policy || !principal) return { allowed: true };
  const answer = input.policy.evaluate({
    principal,
    tool,
    action: 'call',
    input: input.frozenInput,
    run: runFactsOf(input.run, input.now),
    now: input.now,
  });
  if (answer.allowed) return { allowed: true };
  return {
    allowed: false,
    message: refusalMessage(tool.name, answer, 'may no longer'),
    ...(answer.unrepresentable ? {} : { policies: answer.determining }),
  };
}

/** The decision as the lifecycle engine records it (its `validate` event). */
export function validationOf(decision: CallDecision): Validation {
  // Only where configured policies decided does the detail name them: without policies it reads as it always has.
  const named = decision.policies ? { policies: decision.policies } : {};
  const ruled = { ...named, ...(decision.shadow ? { shadow: decision.shadow } : {}) };
  if (decision.decision === 'deny')
    return { decision: 'deny', outcome: decision.outcome, detail: { decision: 'deny', code: decision.code, ...named }, ...ruled };
  const { risk, frozenArguments, costCents, approvalRequired, deadlineAt, lockKey, approvalLines, secretFields } = decision;
  return {
    decision: 'allow',
    risk,
    frozenArguments,
    costCents,
    approvalRequired,
    deadlineAt,
    ...(lockKey === undefined ? {} : { lockKey }),
    approvalLines,
    ...(secretFields === undefined ? {} : { secretFields }),
    detail: {
      decision: 'allow',
      approval: approvalRequired ? 'required' : 'not_required',
      risk,
      costCents,
      ...named,
    },
    ...ruled,
  };
}

/**
 * Preview: what submitting this call now would decide, without creating anything: the policy decision,
 * then the run's admission (a closed run, the turn, tool-call and spend budgets).
 */
export function previewCall(input: CallPolicyInput & { run: RunRecord; turn: number }): CallDecision {
  const decided = decideCall(input);
  if (decided.decision === 'deny') return decided;
  const admission = admitCall(input.run, input.turn, decided.costCents, input.now, frozenCallKey(input.toolName, decided.frozenArguments));
  if (admission.admitted) return decided;
  if (admission.reason === 'loop_detected')
    return { ...loopDetected(admission.message), ...(decided.policies ? { policies: decided.policies } : {}) };
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

/** The loop fuse's refusal (budgets.ts `loopRefusal`), as submission records it and preview predicts it. */
export function loopDetected(message: string): CallDecision {
  return { decision: 'deny', code: 'loop_detected', message, outcome: { kind: 'rejected', code: 'loop_detected', message } };
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
