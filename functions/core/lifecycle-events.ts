import type { AfterAttempt, DoubtSettlement, ReconcilePlan } from './attempt-protocol';
import type { OperationRecord, Outcome, PolicyIds, ShadowDecision } from './model';
import type { NewTraceEvent } from './trace';

/** What the validation step decided (see call-policy), as the engine needs it. */
export type Validation =
  | {
      decision: 'allow';
      risk: OperationRecord['risk'];
      frozenArguments: string;
      costCents: number;
      approvalRequired: boolean;
      deadlineAt: string;
      lockKey?: string;
      approvalLines?: string[];
      secretFields?: string[];
      detail: Record<string, unknown>;
      policies?: PolicyIds;
      shadow?: ShadowDecision;
    }
  | {
      decision: 'deny';
      outcome: Exclude<Outcome, { kind: 'succeeded' }>;
      detail: Record<string, unknown>;
      policies?: PolicyIds;
      shadow?: ShadowDecision;
    };

export type ReconcileFinding =
  | { result: 'found'; outcome: Outcome }
  /** `lookAgainInSeconds`: nothing found, but too soon to conclude (steps/reconcile.ts); look again then. */
  | { result: 'not_found'; retry: { delaySeconds: number } | undefined; lookAgainInSeconds?: number }
  | { result: 'lookup_failed'; retryInSeconds: number | undefined }
  | { result: 'needs_review'; reason: string };

export type LifecycleEvent =
  | { type: 'validate'; validation: Validation; leaseUntil: string }
  | { type: 'exhaust_budget'; message: string; code?: 'spend_limit' }
  | { type: 'request_approval'; approvalId: string; expiresAt: string; taskToken: string; leaseUntil: string }
  | { type: 'decide_approval'; decision: 'approve' | 'reject'; by: string; reason?: string }
  | { type: 'expire_approval' }
  /** Where the request's Slack messages went (functions/slack/channel.ts); changes nothing else. */
  | { type: 'note_approval_messages'; messages: { channel: string; ts: string }[] }
  /** A waiting approval's `approvalEscalation` step `step` is sent (steps/escalation.ts): recorded before it goes out. */
  | { type: 'escalate_approval'; step: number; afterMinutes: number; escalated: string[]; reminded: string[] }
  | {
      type: 'start_attempt';
      leaseUntil: string;
      /** The submission records the intent; the worker that will send it claims it (`claim_attempt`). */
      unclaimed?: boolean;
    }
  | { type: 'claim_attempt'; leaseUntil: string }
  | {
      type: 'refuse_attempt';
      outcome: Exclude<Outcome, { kind: 'succeeded' }>;
      /** An earlier attempt may still take effect: how the refusal is settled (core/attempt-protocol.ts). */
      inDoubt?: DoubtSettlement;
      /** Why, where the outcome's code alone does not say it (traced on `result.recorded`). */
      reason?: 'lock_wait_deadline';
    }
  | {
      type: 'finish_attempt';
      attempt: number;
      outcome: Outcome;
      latencyMs: number;
      upstreamStatus?: number;
      after: AfterAttempt;
      leaseUntil?: string;
    }
  | { type: 'lose_attempt'; leaseUntil: string }
  | { type: 'lock_busy'; delaySeconds: number; leaseUntil: string }
  /** The recorded attempt was never taken by a worker (its Execute invocation was throttled): it waits, then goes back to Execute. */
  | { type: 'defer_attempt'; delaySeconds: number; leaseUntil: string }
  | { type: 'start_reconcile'; plan: ReconcilePlan; leaseUntil: string }
  | { type: 'finish_reconcile'; plan: ReconcilePlan; finding: ReconcileFinding; leaseUntil?: string }
  | { type: 'cancel'; reason: string }
  | { type: 'resolve'; verdict: 'succeeded' | 'failed'; by: string; note: string }
  | { type: 'report' }
  | { type: 'resume'; leaseUntil: string };

export type LifecycleEventType = LifecycleEvent['type'];

export interface Transition {
  op: OperationRecord;
  events: NewTraceEvent[];
}

/** What every handler may use besides the record and its event. */
export interface Context {
  now: number;
  /** `now` as the record writes it. */
  at: string;
  /** What every trace event of this operation names. */
  ids: { operationId: string; callId: string };
}

export type EventOf<K extends LifecycleEventType> = Extract<LifecycleEvent, { type: K }>;
/** How the engine applies one kind of event (one per event type, see engine.ts). */
export type Handler<K extends LifecycleEventType> = (op: OperationRecord, event: EventOf<K>, ctx: Context) => Transition;

export const noEvents = (op: OperationRecord): Transition => ({ op, events: [] });
export const notBeforeIn = (ctx: Context, seconds: number) => new Date(ctx.now + seconds * 1000).toISOString();
