import { OperationConflictError, RunConflictError } from '../adapters/dynamo-store';
import { admitCall, DEFAULT_BUDGETS } from '../core/budgets';
import { hashValue, parseArguments, sha256 } from '../core/canonical';
import { envelopeFor } from '../core/envelope';
import { newIdempotencyKey, newRunId, operationIdFor } from '../core/ids';
import { moveTo } from '../core/lifecycle';
import { SCHEMA_VERSION, type Budgets, type OperationRecord, type Principal, type RunRecord } from '../core/model';
import { recordOutcome } from '../core/settle';
import type { NewTraceEvent } from '../core/trace';
import { executionNameOf, type Deps } from './deps';

export async function createRun(deps: Deps, principal: Principal, budgets: Partial<Budgets> | undefined, metadata?: Record<string, unknown>): Promise<RunRecord> {
  const now = deps.now();
  const merged = { ...DEFAULT_BUDGETS, ...budgets };
  const run: RunRecord = {
    schemaVersion: SCHEMA_VERSION,
    runId: newRunId(),
    principalId: principal.id,
    status: 'open',
    budgets: merged,
    usage: { turns: 0, toolCalls: 0, spendCents: 0 },
    lastTurn: 0,
    metadata,
    createdAt: new Date(now).toISOString(),
    updatedAt: new Date(now).toISOString(),
    deadlineAt: new Date(now + merged.maxWallClockSeconds * 1000).toISOString(),
    seq: 0,
  };
  await deps.store.putNewRun(run);
  return run;
}

export interface ToolCallRequest {
  callId: string;
  turn: number;
  name: string;
  arguments: unknown;
}

export type SubmitResult =
  | { kind: 'created' | 'replayed'; op: OperationRecord }
  | { kind: 'conflict' }
  | { kind: 'run_closed' };

/**
 * Submits a tool call once: through the submission guard where there is one (a replay is answered from
 * it, a changed payload refused), and always through the conditional create below.
 */
export async function submitOnce(deps: Deps, run: RunRecord, call: ToolCallRequest): Promise<SubmitResult> {
  if (!deps.submissionGuard) return submitToolCall(deps, run, call);
  const inputHash = `${call.name}|${argumentsHash(call.arguments)}`;
  let submitted: OperationRecord | undefined;
  const guarded = await deps.submissionGuard({ runId: run.runId, callId: call.callId, inputHash }, async () => {
    const result = await submitToolCall(deps, run, call);
    // Only a created or replayed operation is worth remembering; refusals are answered afresh.
    if (result.kind !== 'created' && result.kind !== 'replayed') throw new SubmissionRefused(result);
    submitted = result.op;
    return { kind: result.kind, operationId: result.op.operationId };
  }).catch((error) => {
    // Powertools deletes its record and rethrows what the function threw.
    if (error instanceof SubmissionRefused) return { kind: 'refused' as const, result: error.result };
    throw error;
  });
  if (guarded.kind === 'refused') return guarded.result;
  if (guarded.kind === 'payload_mismatch') return { kind: 'conflict' };
  // A replay answered from the idempotency table still reads the operation's current state.
  const op = submitted ?? (await deps.store.getOperation(guarded.value.operationId));
  if (!op) throw new Error(`operation ${guarded.value.operationId} vanished`);
  return { kind: guarded.replayed ? 'replayed' : guarded.value.kind, op };
}

class SubmissionRefused extends Error {
  constructor(readonly result: SubmitResult) {
    super(result.kind);
  }
}

/**
 * Records the model's proposal durably, then starts its lifecycle. The operation id is derived from
 * (runId, callId), so concurrent duplicates race on one conditional put and exactly one wins.
 */
/** The hash of the arguments as frozen: equal values hash equally whether sent as object or JSON string. */
function argumentsHash(raw: unknown): string {
  const parsed = parseArguments(raw);
  return parsed.ok ? hashValue(parsed.value) : sha256(String(raw));
}

export async function submitToolCall(deps: Deps, run: RunRecord, call: ToolCallRequest): Promise<SubmitResult> {
  const inputHash = argumentsHash(call.arguments);
  const operationId = operationIdFor(run.runId, call.callId);

  for (let round = 0; round < 50; round++) {
    const existing = await deps.store.getOperation(operationId);
    if (existing) {
      if (existing.inputHash !== inputHash || existing.toolName !== call.name) return { kind: 'conflict' };
      if (existing.state === 'proposed') await startLifecycle(deps, existing);
      return { kind: 'replayed', op: existing };
    }
    const current = round === 0 ? run : await deps.store.getRun(run.runId);
    if (!current) throw new Error(`run ${run.runId} vanished`);
    const now = deps.now();
    const at = new Date(now).toISOString();
    const proposed: OperationRecord = {
      schemaVersion: SCHEMA_VERSION,
      operationId,
      runId: run.runId,
      callId: call.callId,
      turn: call.turn,
      toolName: call.name,
      principalId: current.principalId,
      state: 'proposed',
      rawArguments: call.arguments,
      inputHash,
      idempotencyKey: newIdempotencyKey(),
      attempts: 0,
      createdAt: at,
      updatedAt: at,
      version: 0,
      leaseUntil: new Date(now + 60_000).toISOString(),
      resumes: 0,
    };
    const events: NewTraceEvent[] = [
      { type: 'operation.proposed', operationId, callId: call.callId, to: 'proposed', detail: { toolName: call.name, turn: call.turn, inputHash } },
    ];
    const admission = admitCall(current, call.turn, now);
    if (!admission.admitted && admission.reason === 'run_closed') return { kind: 'run_closed' };

    let op = proposed;
    if (!admission.admitted) {
      // Exhausted: the operation still exists and settles at once, so the model gets an envelope saying why.
      if (current.status === 'open') events.push({ type: 'budget.exhausted', operationId, callId: call.callId, detail: { reason: admission.message, status: admission.run.status } });
      const outcome = { kind: 'budget_exhausted', code: 'budget_exhausted', message: admission.message } as const;
      const settled = recordOutcome(op, outcome);
      const reported = moveTo(settled.op, 'reported', { envelope: envelopeFor(op, outcome), plan: { next: 'done' } });
      op = reported.op;
      events.push(...settled.events, ...reported.events, { type: 'result.reported', operationId, callId: call.callId, detail: { status: 'budget_exhausted' } });
    }
    try {
      const out = await deps.store.commit({ run: { before: current, after: admission.run }, ops: [{ after: op }], events });
      const created = out.ops[0];
      if (created.state === 'proposed') await startLifecycle(deps, created);
      return { kind: 'created', op: created };
    } catch (error) {
      if (error instanceof RunConflictError || error instanceof OperationConflictError) continue;
      throw error;
    }
  }
  throw new Error(`tool call ${call.callId}: too much contention`);
}

/** Starting is idempotent by execution name; an execution that already exists is the one we want. */
export async function startLifecycle(deps: Deps, op: OperationRecord): Promise<void> {
  await deps.lifecycle.start(op.operationId, executionNameOf(op));
}
