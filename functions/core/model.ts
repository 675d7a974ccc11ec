import type { StoredResult } from './result-record';

/** Persisted shapes. Every item carries a schemaVersion so later versions can read old records. */

/**
 * 2: results are recorded as `StoredResult` (canonical JSON in the record, or a blob store key), arguments
 * once, the stored envelope without the result. Records of version 1 are read through the store's upgrade.
 */
export const SCHEMA_VERSION = 2 as const;

/** A tool's risk class: what an unattended or repeated call could do. */
export const Risk = { read: 'read', reversibleWrite: 'reversible_write', irreversibleWrite: 'irreversible_write' } as const;
/** A tool's risk class: `read`, `reversible_write` or `irreversible_write`. */
export type Risk = (typeof Risk)[keyof typeof Risk];

export type Role = 'agent' | 'approver' | 'reviewer' | 'admin';

export interface Principal {
  id: string;
  roles: Role[];
  tools: string[] | '*';
  /** What policies see of this principal besides its roles (`principal.<name>` in Cedar; docs/policies.md). */
  attributes?: Record<string, string | number | boolean | string[]>;
}

/** The determining policy ids of a call: of its tool action, and of its unattended action where it was asked. */
export interface PolicyIds {
  call: string[];
  unattended?: string[];
}

export interface ShadowDecision {
  decision: 'allow' | 'deny' | 'require_approval';
  /** The log-only policies among the determining ones (or all determining ids where the decision would differ). */
  policies: string[];
}

export interface Budgets {
  maxTurns: number;
  maxToolCalls: number;
  maxWallClockSeconds: number;
  maxSpendCents: number;
  /** The loop fuse: a call whose tool and arguments match this many earlier calls of the run is refused (`loop_detected`). */
  maxIdenticalCalls?: number;
}

export interface Usage {
  turns: number;
  toolCalls: number;
  /** Tool spend in whole cents (tool costs are whole cents; runs stored before model spend keep this field). */
  spendCents: number;
  /** Model spend charged (settled, overrun or expired reservations), in micro-cents. */
  modelSpendMicros?: number;
  /** Open model reservations, in micro-cents. */
  reservedMicros?: number;
  /**
   * Tool spend, model spend and open reservations in micro-cents: the one field a conditional write compares
   * with the cap. Absent until the run's first model reservation (its tool spend is then all it holds).
   */
  heldMicros?: number;
}

export type RunStatus = 'open' | 'cancelled' | 'budget_exhausted' | 'expired';

export interface RunRecord {
  schemaVersion: number;
  runId: string;
  principalId: string;
  status: RunStatus;
  budgets: Budgets;
  usage: Usage;
  /** Highest turn number seen; a call with a higher turn opens a new turn. */
  lastTurn: number;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  deadlineAt: string;
  /** Epoch seconds after which DynamoDB may delete the run, its operations and its trace (retention). */
  expiresAtEpoch?: number;
  /** Admitted calls per `identicalCallKey`, kept where the run has `maxIdenticalCalls` (the loop fuse). */
  identicalCalls?: Record<string, number>;
}

/** What a finished attempt, a reconciliation or a person established. */
export type Outcome =
  /** `result` is absent only where a person confirmed the call succeeded (there is no result to keep). */
  | { kind: 'succeeded'; result?: StoredResult; upstreamStatus?: number }
  | {
      kind: 'rejected';
      code: 'invalid_arguments' | 'forbidden' | 'unknown_tool' | 'approval_rejected' | 'approval_expired' | 'loop_detected';
      message: string;
    }
  | {
      kind: 'failed_retryable';
      code: 'rate_limited' | 'upstream_unavailable';
      message: string;
      upstreamStatus?: number;
      retryAfterSeconds?: number;
    }
  | {
      kind: 'failed_permanent';
      code: 'permanent_failure' | 'rate_limited' | 'upstream_unavailable' | 'invalid_output';
      message: string;
      upstreamStatus?: number;
    }
  | { kind: 'outcome_unknown'; code: 'timeout_unknown' | 'invalid_output'; message: string; upstreamStatus?: number }
  /** `spend_limit`: over the principal's `spendLimits` (the run itself stays open). */
  | { kind: 'budget_exhausted'; code: 'budget_exhausted' | 'spend_limit'; message: string }
  | { kind: 'cancelled'; code: 'cancelled'; message: string };

export type OutcomeKind = Outcome['kind'];

/** An outcome that says the call did not take effect and will not be tried again. */
export type Failure = Extract<Outcome, { kind: 'failed_permanent' }>;

/** The step the lifecycle takes next; Step Functions routes on it. */
export type NextStep =
  | 'validate'
  | 'await_approval'
  | 'expire_approval'
  | 'execute'
  | 'retry'
  | 'reconcile'
  | 'reconcile_later'
  | 'report'
  | 'done';

export interface ApprovalInfo {
  approvalId: string;
  state: 'pending' | 'approved' | 'rejected' | 'expired';
  expiresAt: string;
  decidedBy?: string;
  decidedAt?: string;
  reason?: string;
  /** Where the request was posted in Slack (functions/slack), so a decision and the outcome update each message. */
  slackMessages?: SlackMessageRef[];
  /** When it was requested (absent on approvals requested before it was kept: the operation's creation then). */
  requestedAt?: string;
  /** The reminder and escalation steps sent so far, in order (core/escalation.ts). */
  escalations?: { step: number; at: string; escalated: string[]; reminded: string[] }[];
}

/** A Slack message: its conversation and timestamp (`chat.update` names a message by both). */
export interface SlackMessageRef {
  channel: string;
  ts: string;
}

export interface AttemptInfo {
  attempt: number;
  /** Its class and code; a success's result is kept once, in the operation's `outcome`. */
  outcome: Outcome;
  latencyMs: number;
  upstreamStatus?: number;
  finishedAt: string;
}

export interface OperationRecord {
  schemaVersion: number;
  operationId: string;
  runId: string;
  callId: string;
  turn: number;
  toolName: string;
  /** The run's owner. */
  principalId: string;
  /** The principal who submitted the call (an admin may submit into another principal's run); never its approver. */
  requestedBy?: string;
  /**
   * The requester's roles, tools and attributes as its access token granted them at submission, for a token
   * principal (`oauth:<claim>`) only: no config holds it, so the re-check before each attempt decides with
   * this (core/policy.ts `decidingPrincipal`). Config principals are read from the config then. Absent on
   * records written before it existed: such a call of a token principal is refused at its re-check.
   */
  requesterGrant?: Pick<Principal, 'roles' | 'tools' | 'attributes'>;
  state: import('./lifecycle').OperationState;
  risk?: Risk;
  /**
   * The arguments as the model sent them (JSON text), until validation accepts them: then the frozen ones
   * replace them, so a record holds its arguments once (`inputHash` still names what was sent).
   */
  rawArguments?: string;
  /** Canonical JSON of the validated arguments: the only input any attempt ever sees. */
  frozenArguments?: string;
  inputHash: string;
  idempotencyKey: string;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  /** Optimistic-concurrency version: every write names the version it read. */
  version: number;
  /** Non-terminal operations carry a lease; the sweeper resumes those whose lease has passed. */
  leaseUntil?: string;
  /** When the whole operation must end, set at validation. */
  deadlineAt?: string;
  approvalRequired?: boolean;
  /** The resource lock the call takes (`<tool>:<key>`), from the tool's `lockKey` at validation. */
  lockKey?: string;
  /** The tool's `describeForApproval` lines at validation (absent on operations validated before they were kept). */
  approvalLines?: string[];
  /**
   * The tool's `secretFields` at validation (`[]` for none), on operations a person must approve: masked wherever
   * they are shown, also by functions that never load the tools (absent on operations validated before they were kept).
   */
  secretFields?: string[];
  /** Where configured policies decided the call: their determining ids (the approval page and console show them). */
  policies?: PolicyIds;
  approval?: ApprovalInfo;
  /** Server-side only; never leaves the process in an API response, log or trace. */
  approvalTaskToken?: string;
  costCents?: number;
  lastAttempt?: AttemptInfo;
  /** What the lifecycle decided to do next and, for a retry, not before when. */
  plan?: { next: NextStep; notBefore?: string };
  /** Looks that found the resource's lock held, since the last attempt began (the lock wait's backoff). */
  lockWaits?: number;
  /** Times Reconcile found the attempt still unclaimed (its Execute throttled) and waited before handing it back. */
  throttleWaits?: number;
  /**
   * The rate-limit slots (`concurrent`) the operation holds while it is in flight, and as which holder (the
   * submission that took them); freed when it settles (steps/rate-slots.ts).
   */
  rateSlots?: { holder: string; keys: string[] };
  /**
   * `resumes` when the last attempt began: an Execute that finds that attempt unfinished under the same
   * execution, within its lease, is a second delivery of the step (AWS delivers at least once), not a
   * successor of a lost worker.
   */
  attemptResumes?: number;
  /**
   * Whether a worker holds the unfinished attempt's send. `false` when the submission recorded the intent of a
   * replay-safe call's first attempt and no worker has picked it up yet: the first delivery of Execute claims
   * it (a conditional write), so two deliveries never send one attempt at once (each could answer
   * differently, and a failure of one would hide what the other did). Absent on older records: held.
   */
  attemptClaimed?: boolean;
  outcome?: Outcome;
  reconcileAttempts?: number;
  /**
   * The first attempt whose outcome was unknown (no answer, an answer that proves nothing, or a worker
   * that vanished). Its request may still take effect after a status lookup found nothing (it can be
   * overtaken on its way), so from then on a failure is recorded only on a later lookup's word, or a person's.
   */
  inDoubtSince?: number;
  /**
   * When the runner last gave up on an attempt's answer. A lookup that finds nothing is conclusive only once
   * the request has had as long again as the tool's timeout to land (steps/reconcile.ts).
   */
  lastUnansweredAt?: string;
  /** A failure reached while in doubt, waiting for that lookup: recorded if it finds nothing, else the effect is. */
  failureToConfirm?: Failure;
  review?: { required: boolean; reason: string; resolvedBy?: string; note?: string };
  envelope?: import('./envelope').Envelope;
  /** A result that arrived after the operation was cancelled: recorded, never reported. */
  lateOutcome?: Outcome;
  resumes: number;
  /**
   * The caller's W3C trace context at submission: each attempt's span is its child. Kept on the record
   * because attempts run in another process (the Execute Lambda) than the request that carried it.
   */
  traceparent?: string;
  /** Copied from the run: retention applies to the whole run at once. */
  expiresAtEpoch?: number;
  /**
   * Store bookkeeping: where this record's trace blocks start. A store that writes a write's events before
   * the record itself (two plain writes, not a transaction) counts a block only once the record names it,
   * so the events of a write that lost its race never show. Steps carry it along and never set it.
   */
  traceSeqs?: number[];
}
