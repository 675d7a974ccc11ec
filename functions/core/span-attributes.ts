import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import { sha256 } from './canonical';
import type { OperationRecord, PolicyIds, RunRecord } from './model';
import type { AttemptSpanEnd, AttemptSpanStart } from './ports';
import { centsOfMicros, heldMicrosOf, microsOfCents } from './spend';

/**
 * The GenAI names an attempt's span uses, copied from `@opentelemetry/semantic-conventions/incubating`:
 * the package advises against importing that entry (its names may change in any minor version), so they live
 * here under the package's own export names, and test/unit/core/span-attributes.test.ts holds them equal to it.
 */
export const GEN_AI_NAMES = {
  ATTR_GEN_AI_OPERATION_NAME: 'gen_ai.operation.name',
  ATTR_GEN_AI_TOOL_NAME: 'gen_ai.tool.name',
  ATTR_GEN_AI_TOOL_CALL_ID: 'gen_ai.tool.call.id',
  ATTR_GEN_AI_TOOL_TYPE: 'gen_ai.tool.type',
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL: 'execute_tool',
} as const;

/** `gen_ai.tool.type`: the conventions' word for a tool the application itself runs (they list no constant for it). */
export const GEN_AI_TOOL_TYPE_FUNCTION = 'function';

/** The runner's own attributes on an attempt's span (docs/operate.md lists them for users). */
export const TOOLRUNNER_ATTRS = {
  operationId: 'toolrunner.operation_id',
  runId: 'toolrunner.run_id',
  attempt: 'toolrunner.attempt',
  risk: 'toolrunner.risk',
  idempotencyKeySent: 'toolrunner.idempotency.key_sent',
  replaySafe: 'toolrunner.idempotency.replay_safe',
  /** `approved` or `not_required`: kept as it was before the finer `approval.*` attributes existed. */
  approval: 'toolrunner.approval',
  policyDecision: 'toolrunner.policy.decision',
  policyIds: 'toolrunner.policy.ids',
  approvalRequired: 'toolrunner.approval.required',
  approvalDecidedBy: 'toolrunner.approval.decided_by',
  budgetRemainingCents: 'toolrunner.budget.remaining_cents',
  idempotencyKeySha256: 'toolrunner.idempotency_key.sha256',
  outcome: 'toolrunner.outcome',
  outcomeCode: 'toolrunner.outcome.code',
  upstreamStatusCode: 'toolrunner.upstream.status_code',
  latencyMs: 'toolrunner.latency_ms',
} as const;

/** An attribute value as both OpenTelemetry and X-Ray (where arrays are joined) take it. */
export type SpanAttributeValue = string | number | boolean | string[];

/** The attributes known before the call: the GenAI names for tool execution, then the runner's own decisions. */
export function startAttributes(start: AttemptSpanStart): Record<string, SpanAttributeValue> {
  const A = TOOLRUNNER_ATTRS;
  return {
    [GEN_AI_NAMES.ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_NAMES.GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    [GEN_AI_NAMES.ATTR_GEN_AI_TOOL_NAME]: start.toolName,
    [GEN_AI_NAMES.ATTR_GEN_AI_TOOL_CALL_ID]: start.callId,
    [GEN_AI_NAMES.ATTR_GEN_AI_TOOL_TYPE]: GEN_AI_TOOL_TYPE_FUNCTION,
    [A.operationId]: start.operationId,
    [A.runId]: start.runId,
    [A.attempt]: start.attempt,
    [A.risk]: start.risk,
    [A.idempotencyKeySent]: start.idempotencyKeySent,
    [A.replaySafe]: start.replaySafe,
    [A.approval]: start.approval,
    [A.policyDecision]: start.policyDecision,
    ...(start.policyIds ? { [A.policyIds]: start.policyIds } : {}),
    [A.approvalRequired]: start.approvalRequired,
    ...(start.approvalDecidedBy !== undefined ? { [A.approvalDecidedBy]: start.approvalDecidedBy } : {}),
    ...(start.budgetRemainingCents !== undefined ? { [A.budgetRemainingCents]: start.budgetRemainingCents } : {}),
    [A.idempotencyKeySha256]: start.idempotencyKeySha256,
  };
}

/** The attributes of the attempt's end: its outcome class, code and the upstream's status. */
export function endAttributes(end: AttemptSpanEnd): Record<string, SpanAttributeValue> {
  const A = TOOLRUNNER_ATTRS;
  return {
    [A.outcome]: end.outcome.kind,
    ...('code' in end.outcome ? { [A.outcomeCode]: end.outcome.code, [ATTR_ERROR_TYPE]: end.outcome.code } : {}),
    ...(end.upstreamStatus !== undefined ? { [A.upstreamStatusCode]: end.upstreamStatus } : {}),
    [A.latencyMs]: end.latencyMs,
  };
}

/** The determining ids of both questions the policies answered (may it be called, may it run unattended), once each. */
export function determiningPolicyIds(policies: PolicyIds): string[] {
  return [...new Set([...policies.call, ...(policies.unattended ?? [])])].sort();
}

/** What the run may still spend (tools and models, less open reservations), in cents to 4 decimal places; never negative. */
export function budgetRemainingCents(run: Pick<RunRecord, 'budgets' | 'usage'>): number {
  return centsOfMicros(Math.max(0, microsOfCents(run.budgets.maxSpendCents) - heldMicrosOf(run.usage)));
}

/**
 * The decisions behind an attempt, as its span carries them. The idempotency key only as its SHA-256 (hex): a
 * trace backend is read by more people than the upstream that dedupes by the key, and the hash still matches
 * a key someone holds. `run`: the run as this process last read or admitted it (absent: no budget is said).
 */
export function attemptDecisions(
  op: Pick<OperationRecord, 'approvalRequired' | 'approval' | 'policies' | 'idempotencyKey'>,
  run: Pick<RunRecord, 'budgets' | 'usage'> | undefined,
): Pick<
  AttemptSpanStart,
  'approval' | 'policyDecision' | 'policyIds' | 'approvalRequired' | 'approvalDecidedBy' | 'budgetRemainingCents' | 'idempotencyKeySha256'
> {
  const approved = op.approval?.state === 'approved';
  return {
    approval: approved ? 'approved' : 'not_required',
    // An attempt runs only for a call that was allowed, with or without a person first.
    policyDecision: op.approvalRequired ? 'require_approval' : 'allow',
    ...(op.policies ? { policyIds: determiningPolicyIds(op.policies) } : {}),
    approvalRequired: op.approvalRequired === true,
    ...(approved && op.approval?.decidedBy !== undefined ? { approvalDecidedBy: op.approval.decidedBy } : {}),
    ...(run ? { budgetRemainingCents: budgetRemainingCents(run) } : {}),
    idempotencyKeySha256: sha256(op.idempotencyKey).slice('sha256:'.length),
  };
}
