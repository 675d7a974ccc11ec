import { reserveSpend } from '../core/budgets';
import { canonicalJson, parseArguments } from '../core/canonical';
import { moveTo, resumeStep } from '../core/lifecycle';
import type { NextStep, OperationRecord, Outcome, RunRecord } from '../core/model';
import { mayCallTool } from '../core/policy';
import { recordOutcome } from '../core/settle';
import { deadlineSecondsOf, needsApproval, type ToolSpec } from '../core/tool-spec';
import type { NewTraceEvent } from '../core/trace';
import { principalIn, type Deps } from './deps';
import { mutate, type Decision } from './mutate';

/** What every Task returns to Step Functions: where to go next. */
export interface StepOutput {
  operationId: string;
  next: NextStep;
  delaySeconds?: number;
  /** Seconds left until the approval expires, for AwaitApproval's TimeoutSecondsPath (see the ASL for why here). */
  Payload?: { approvalTimeoutSeconds: number };
}

const MAX_FROZEN_BYTES = 128 * 1024;

/**
 * The lifecycle's entry: validates a proposed operation, or, for a resumed one, says where it continues.
 * Checks run in a fixed order: unknown tool, authorization, arguments, spend budget, approval policy.
 */
export async function validateOperation(deps: Deps, operationId: string): Promise<StepOutput> {
  const first = await deps.store.getOperation(operationId);
  if (!first) throw new Error(`operation ${operationId} not found`);
  const tool = deps.tools.get(first.toolName);
  const config = await deps.config();
  const principal = principalIn(config, first.principalId);
  const { value: next, op } = await mutate(deps.store, first.runId, operationId, (run, op): Decision<NextStep> => {
    if (op.state !== 'proposed') {
      const step = resumeStep(op);
      return { value: step === 'validate' ? 'report' : step };
    }
    const now = deps.now();
    const reject = (code: Extract<Outcome, { kind: 'rejected' }>['code'], message: string) => settle(run, op, { kind: 'rejected', code, message }, { decision: 'deny', code });
    if (!tool) return reject('unknown_tool', `there is no tool named ${op.toolName}`);
    if (!mayCallTool(principal, tool.name)) return reject('forbidden', `this principal may not call ${tool.name}`);
    const parsed = parseArguments(op.rawArguments);
    if (!parsed.ok) return reject('invalid_arguments', parsed.message);
    const checked = tool.inputSchema.safeParse(parsed.value);
    if (!checked.success) return reject('invalid_arguments', describeIssues(checked.error.issues));
    const frozenArguments = canonicalJson(checked.data);
    if (Buffer.byteLength(frozenArguments) > MAX_FROZEN_BYTES) return reject('invalid_arguments', 'arguments are larger than 128 KiB');

    const costCents = tool.costCents?.(checked.data) ?? 0;
    const spend = reserveSpend(run, costCents, now);
    if (!spend.admitted) {
      const message = spend.reason === 'run_closed' ? 'the run was cancelled' : spend.message;
      const outcome: Outcome = spend.reason === 'run_closed' ? { kind: 'cancelled', code: 'cancelled', message } : { kind: 'budget_exhausted', code: 'budget_exhausted', message };
      const settled = settle(spend.reason === 'run_closed' ? run : spend.run, op, outcome, { decision: 'deny', code: outcome.code });
      if (spend.reason !== 'run_closed' && run.status === 'open') {
        settled.change!.events.unshift({ type: 'budget.exhausted', operationId: op.operationId, callId: op.callId, detail: { reason: message, status: spend.run.status } });
      }
      return settled;
    }
    const approvalRequired = needsApproval(tool, checked.data);
    const moved = moveTo(op, 'validated', {
      risk: tool.risk,
      frozenArguments,
      costCents,
      approvalRequired,
      deadlineAt: new Date(now + deadlineSecondsOf(tool) * 1000 + (approvalRequired ? config.approvalTtlSeconds * 1000 : 0)).toISOString(),
      leaseUntil: leaseFrom(now, tool),
      plan: { next: approvalRequired ? 'await_approval' : 'execute' },
    });
    const decision: NewTraceEvent = {
      type: 'policy.decision',
      operationId: op.operationId,
      callId: op.callId,
      detail: { decision: 'allow', approval: approvalRequired ? 'required' : 'not_required', risk: tool.risk, costCents },
    };
    return { value: approvalRequired ? 'await_approval' : 'execute', change: { run: spend.run, op: moved.op, events: [decision, ...moved.events] } };
  });
  return withTimers({ operationId, next }, op, config.approvalTtlSeconds, deps.now());
}

function settle(run: RunRecord, op: OperationRecord, outcome: Outcome, decision: Record<string, unknown>): Decision<NextStep> {
  const recorded = recordOutcome(op, outcome);
  return {
    value: 'report',
    change: { run, op: recorded.op, events: [{ type: 'policy.decision', operationId: op.operationId, callId: op.callId, detail: decision }, ...recorded.events] },
  };
}

/** Zod issues as one line the model can act on; never echoes argument values. */
function describeIssues(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : 'arguments'}: ${i.message}`)
    .join('; ');
}

/** A lease long enough for one attempt; past it the sweeper presumes the worker lost. */
export function leaseFrom(now: number, tool: ToolSpec | undefined): string {
  return new Date(now + (tool?.timeoutMs ?? 30_000) + 60_000).toISOString();
}

/** A resumed lifecycle keeps the timers it had: the approval's expiry and a scheduled retry's time. */
function withTimers(out: StepOutput, op: OperationRecord, ttlSeconds: number, now: number): StepOutput {
  if (out.next === 'await_approval') {
    const expiresAt = op.approval?.expiresAt ? Date.parse(op.approval.expiresAt) : now + ttlSeconds * 1000;
    return { ...out, Payload: { approvalTimeoutSeconds: Math.max(1, Math.ceil((expiresAt - now) / 1000)) } };
  }
  if (out.next === 'retry' || out.next === 'reconcile_later') {
    const notBefore = op.plan?.notBefore ? Date.parse(op.plan.notBefore) : now;
    return { ...out, delaySeconds: Math.max(0, Math.ceil((notBefore - now) / 1000)) };
  }
  return out;
}
