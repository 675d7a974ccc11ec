/** Trace event types; `docs/openapi.json` documents the event shape (`TraceEvent`). */
export const TraceType = {
  operationProposed: 'operation.proposed',
  stateTransition: 'state.transition',
  policyDecision: 'policy.decision',
  /** What `@mode("log_only")` policies would have decided (not enforced), beside the enforced decision. */
  policyShadow: 'policy.shadow',
  approvalRequested: 'approval.requested',
  approvalDecided: 'approval.decided',
  /** An `approvalEscalation` step asked more people: `detail.recipients`, `detail.step`. */
  approvalEscalated: 'approval.escalated',
  /** An `approvalEscalation` step reminded those asked before: `detail.recipients`, `detail.step`. */
  approvalReminded: 'approval.reminded',
  attemptStarted: 'attempt.started',
  attemptFinished: 'attempt.finished',
  backoffScheduled: 'backoff.scheduled',
  reconcileStarted: 'reconcile.started',
  reconcileFinished: 'reconcile.finished',
  resultRecorded: 'result.recorded',
  resultReported: 'result.reported',
  resultLate: 'result.late',
  budgetExhausted: 'budget.exhausted',
  runCancelled: 'run.cancelled',
  /** A duplicate submission (same callId, same arguments) answered with the stored operation; nothing ran. */
  operationReplayed: 'operation.replayed',
  /** The same callId came again with different arguments: refused with 409 call_id_conflict. */
  callConflict: 'call.conflict',
  /** A model call's price was reserved against the run's spend budget before the call. */
  modelCallReserved: 'model_call.reserved',
  /** A model call was charged at the price of what it used. */
  modelCallSettled: 'model_call.settled',
  /** A model call used more than it reserved; the whole price is charged (the call happened). */
  modelCallOverrun: 'model_call.overrun',
  /** A model call's reservation was not settled within its lease: charged in full. */
  modelCallExpired: 'model_call.expired',
  /** A run's spend or a principal's spend-limit counter crossed 50%, 80% or 100% of its limit (once each). */
  budgetThreshold: 'budget.threshold',
} as const;
export type TraceType = (typeof TraceType)[keyof typeof TraceType];

/** One event of a run's trace: `seq` strictly increasing per run; arguments and results only as hashes or summaries. */
export interface TraceEvent {
  seq: number;
  at: string;
  runId: string;
  operationId?: string;
  callId?: string;
  type: TraceType;
  from?: string;
  to?: string;
  attempt?: number;
  detail?: Record<string, unknown>;
}

/** An event before the store gives it its run, sequence number and time. */
export type NewTraceEvent = Omit<TraceEvent, 'seq' | 'at' | 'runId'>;
