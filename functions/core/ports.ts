import type { ArgumentField } from './approval-view';
import type { AdmissionDelta } from './budgets';
import type { RunnerConfig } from './config';
import type { PolicyConfig, PolicyEvaluator } from './policy-schema';
import type { MetricName } from './metric-names';
import type { OperationRecord, Outcome, RunRecord, RunStatus, Risk } from './model';
import type { ToolContext, ToolRegistry } from './tool-spec';
import type { NewTraceEvent, TraceEvent } from './trace';
import { RunnerError } from './errors';
import type { Log } from './log';
import type { ArgumentsCheck } from './call-policy';
import type { ToolDescription } from './tool-invocation';
import type { ModelCallRecord } from './model-calls';
import type { MinuteKey, RollupAddition, RollupMinute } from './rollups';
import type { SpendCounterRef, SpendTake } from './spend-limits';
import type { BudgetThresholdNotice, ThresholdTarget } from './budget-thresholds';

/**
 * The ports of the core: what the steps need from the world. Adapters (DynamoDB, Step Functions, SNS,
 * the embedded engine, the in-memory store of the tests) implement them; the core imports no adapter.
 */

/** How a new operation changes its run, applied atomically with the operation's creation. */
export type RunChange =
  /** An admitted call: conditional on the budget fields only, never on the whole run. */
  | {
      kind: 'admit';
      delta: AdmissionDelta;
      now: number;
      /** The principal's spend counters (config `spendLimits`) the call moves, each on condition it stays within its cap. */
      spend?: SpendTake[];
    }
  /** The run becomes exhausted or expired (conditional on it still being open). */
  | { kind: 'close'; to: Exclude<RunStatus, 'open' | 'cancelled'> }
  /** Nothing to change (the run was already closed when the call came). */
  | { kind: 'none' };

/** The operation exists already (a duplicate submission); carries it. */
export class OperationExistsError extends RunnerError {
  override name = 'OperationExistsError';
  constructor(
    readonly current: OperationRecord | undefined,
    options?: ErrorOptions,
  ) {
    super('the operation exists already', options);
  }
}

/** The run changed under a conditional write (a budget moved, it closed): read it again and decide again. */
export class RunChangedError extends RunnerError {
  override name = 'RunChangedError';
}

/** A principal's spend counter moved past what the call needs (config `spendLimits`): read the counters and decide again. */
export class SpendCounterChangedError extends RunChangedError {
  override name = 'SpendCounterChangedError';
}

/** The operation is no longer at the version the writer read; carries what is there now. */
export class OperationConflictError extends RunnerError {
  override name = 'OperationConflictError';
  constructor(
    readonly current: OperationRecord | undefined,
    options?: ErrorOptions,
  ) {
    super('the operation changed since it was read', options);
  }
}

/** Several writers raced on one run item; the store could not say which condition failed. Retry later. */
export class ContentionError extends RunnerError {
  override name = 'ContentionError';
}

/** The operations the lifecycle moves, each created with its first trace events. */
export interface OperationStore {
  getOperation(operationId: string): Promise<OperationRecord | undefined>;
  /**
   * Creates an operation with its first trace events (at least one: a run's trace is where its operations
   * are found), and applies `runChange` to its run in the same atomic write.
   */
  createOperation(input: {
    run: RunRecord;
    runChange: RunChange;
    op: OperationRecord;
    events: NewTraceEvent[];
  }): Promise<{ op: OperationRecord; events: TraceEvent[] }>;
  /** Moves an operation from the version read (`before`) to `after`, with its trace events, atomically. */
  updateOperation(
    before: OperationRecord,
    after: OperationRecord,
    events: NewTraceEvent[],
  ): Promise<{ op: OperationRecord; events: TraceEvent[] }>;
  listOperationsOfRun(runId: string): Promise<OperationRecord[]>;
}

/** Runs: their creation, status and listing. */
export interface RunStore {
  getRun(runId: string): Promise<RunRecord | undefined>;
  putNewRun(run: RunRecord): Promise<void>;
  /** Changes a run's status from the one read, with its trace events; RunChangedError if it moved. */
  updateRunStatus(run: RunRecord, to: RunStatus, events: NewTraceEvent[]): Promise<RunRecord>;
  /**
   * One page of runs, newest first, that satisfy `matches` (an owner, a status: decided on the runs read, as
   * a run's status changes after it is listed). `after` is the `nextKey` of the previous page; a `nextKey`
   * means there may be more, and a page may hold fewer than `limit` runs when many were read and few matched.
   */
  listRuns(query: { limit: number; after?: Record<string, string>; matches?: (run: RunRecord) => boolean }): Promise<{
    items: RunRecord[];
    nextKey?: Record<string, string>;
  }>;
}

/** A run's trace: events that change no record, and the whole trace. */
export interface TraceStore {
  /** Appends events that change no record (a replayed duplicate, a refused conflict) to a run's trace. */
  appendRunEvents(runId: string, events: NewTraceEvent[], expiresAtEpoch: number | undefined): Promise<TraceEvent[]>;
  listEvents(runId: string): Promise<TraceEvent[]>;
}

/** What the sweeper walks to resume operations nobody is driving. */
export interface RecoveryStore {
  /**
   * Active operations whose lease passed before `now`, up to `limit`; with `ignoreLeases`, every active
   * one (a runtime that knows none of its executions survived). One that stays active and unclaimed is
   * listed again by a later call, possibly only a while later (the DynamoDB store: a minute).
   */
  listExpiredLeases(now: string, limit: number, options?: { ignoreLeases?: boolean }): Promise<OperationRecord[]>;
  /**
   * The sweeper's walk over its part of what is due (stores that keep a watch list: the DynamoDB store).
   * It reads which operations are due, not the operations: `visit` reads and resumes each, and answers when
   * to look at it again (undefined: settled, or its own write watches it). Without it the sweeper lists
   * with `listExpiredLeases`.
   */
  sweepWatch?(pass: WatchPass, visit: (operationId: string) => Promise<string | undefined>): Promise<WatchPassResult>;
}

/** What people are asked for: approvals and reviews waiting. */
export interface ReviewQueries {
  /**
   * One page of pending, unexpired approvals that `approverId` did not request, oldest first; with `approverId`
   * null, every one (for the sweeper and the overview, which decide nothing: said explicitly, never by omission).
   * `after` is the `nextKey` of the previous page; a `nextKey` means there may be more.
   */
  listPendingApprovals(query: { approverId: string | null; now: string; limit: number; after?: Record<string, string> }): Promise<{
    items: OperationRecord[];
    nextKey?: Record<string, string>;
  }>;
  /** Operations waiting for a reviewer's resolution (outcome_unknown, review required), oldest first. */
  listOpenReviews(limit: number): Promise<OperationRecord[]>;
  /**
   * How many approvals are pending and unexpired at `now`, and how many reviews are open: counted, never
   * tracked; and how much of its time to live the oldest pending approval has used (percent, 0 when none).
   */
  countWaiting(now: string): Promise<{ approvalsWaiting: number; reviewsOpen: number; oldestApprovalTtlUsed?: number }>;
}

/** Leases on the resources tools name with `lockKey`. */
export interface LockStore {
  /** Takes or renews a lease on a resource for one owner (an operation); false while another owner holds it. */
  acquireLock(lockKey: string, owner: string, leaseMs: number, now: number): Promise<boolean>;
  releaseLock(lockKey: string, owner: string): Promise<void>;
}

/** The counters and slots of `rateLimits`. */
export interface RateLimitStore {
  /**
   * Adds one to a rate counter (core/rate-limits.ts `counterKey`) unless it has reached `limit`; false then.
   * One conditional write, so processes that race never admit more than `limit` between them.
   */
  takeRateCount(counterKey: string, limit: number, expiresAtEpoch: number): Promise<boolean>;
  /** Takes one back from a counter (the call it counted was not admitted after all); never below zero. */
  giveBackRateCount(counterKey: string): Promise<void>;
  /**
   * Takes a `concurrent` slot for `holder` (an operation) until `until` (epoch ms): free, its holder's lease
   * passed (a holder that crashed), or held by `holder` already; false while another holds it.
   */
  takeRateSlot(slotKey: string, holder: string, until: number, now: number): Promise<boolean>;
  /** Frees a slot if `holder` still holds it (never one that lapsed and was taken by another). */
  giveBackRateSlot(slotKey: string, holder: string): Promise<void>;
}

/** Each principal's current MCP run. */
export interface McpRunStore {
  /** The run recorded as this principal's current MCP run (2026-07-28 MCP requests that name no run join it), if any. */
  currentMcpRun(principalId: string): Promise<string | undefined>;
  /**
   * Records `runId` as the principal's current MCP run if the record still names `expected` (undefined: no record
   * yet), in one conditional write; false when another request moved it first (the caller reads it again).
   */
  replaceCurrentMcpRun(principalId: string, expected: string | undefined, runId: string): Promise<boolean>;
}

/** The model call's id is taken (a reservation with this requestId was made before); carries what is there. */
export class ModelCallExistsError extends RunnerError {
  override name = 'ModelCallExistsError';
  constructor(
    readonly existing: ModelCallRecord,
    options?: ErrorOptions,
  ) {
    super('a model call with this id exists', options);
  }
}

/** The model call is no longer in the state the writer read (settled or expired meanwhile). */
export class ModelCallChangedError extends RunnerError {
  override name = 'ModelCallChangedError';
}

/** Model calls: reserved against their run's spend budget before the call, charged after it or when the lease runs out. */
export interface ModelCallStore {
  getModelCall(modelCallId: string): Promise<ModelCallRecord | undefined>;
  /**
   * The reservation and its run's change in one conditional write: the run open, before its deadline, and its
   * held spend still leaving room for the reservation (as read: `heldMicrosOf`). RunChangedError when the run
   * moved (read it again and decide again); ModelCallExistsError when the id is taken.
   */
  reserveModelCall(input: {
    run: RunRecord;
    call: ModelCallRecord;
    events: NewTraceEvent[];
    spend?: SpendTake[];
  }): Promise<ModelCallRecord>;
  /**
   * A reserved call settled or expired (`after`), its charge moved from the run's reservations to its model
   * spend, in one write conditional on the call still being reserved (ModelCallChangedError otherwise). An
   * overrun is charged in full: no condition on the run's budget.
   */
  chargeModelCall(input: { before: ModelCallRecord; after: ModelCallRecord; events: NewTraceEvent[] }): Promise<ModelCallRecord>;
}

/** The overview's per-minute rollups (core/rollups.ts): one counter-adding write per call, read a minute an item. */
export interface RollupStore {
  /** Adds the counters to the minute's item (created by the first addition), in one write. */
  addToRollup(addition: RollupAddition): Promise<void>;
  /** The items of the minutes from `first` to `last` (inclusive) that have any, oldest first. */
  readRollups(first: MinuteKey, last: MinuteKey): Promise<RollupMinute[]>;
}

/**
 * Principals' spend counters (config `spendLimits`), keyed by `counterKeyOf`: what each holds in micro-cents
 * (absent: nothing yet). The admitting writes move them (OperationStore, ModelCallStore); this role reads them.
 */
export interface SpendCounterStore {
  getSpendCounters(refs: readonly SpendCounterRef[]): Promise<Record<string, number>>;
  /**
   * Marks `percent` told for the run or counter, on condition it is not marked yet and what it holds has
   * reached `atMicros`: true for the one writer that marked it (that writer tells the crossing).
   */
  markThreshold(target: ThresholdTarget, percent: number, atMicros: number): Promise<boolean>;
  /** What the run or counter holds now (a consistent read) and the thresholds already marked told. */
  readThresholds(target: ThresholdTarget): Promise<{ heldMicros: number; marked: number[] }>;
}

/**
 * Every store role in one object (what the DynamoDB and in-memory stores implement); steps and surfaces
 * take only the roles they use.
 */
export interface Store
  extends OperationStore,
    RunStore,
    TraceStore,
    RecoveryStore,
    ReviewQueries,
    LockStore,
    RateLimitStore,
    McpRunStore,
    ModelCallStore,
    RollupStore,
    SpendCounterStore {}

/** Which state machine runs an execution: Standard (approvals, long waits) or its Express variant. */
export type Machine = 'standard' | 'express';

/** The lifecycle engine as the steps need it: Step Functions on AWS, the embedded engine locally. */
export interface LifecyclePort {
  /** Starts an execution (idempotent by name); `input` says where it enters (see the ASL's Route). */
  start(input: { operationId: string; next: string }, executionName: string, machine?: Machine): Promise<void>;
  /**
   * Runs an Express execution to its end and resolves then (StartSyncExecution): the caller learns the
   * result without polling. Absent where no Express machine is deployed.
   */
  startSync?(input: { operationId: string; next: string }, executionName: string): Promise<void>;
  stop(executionName: string, cause: string): Promise<void>;
  sendTaskSuccess(taskToken: string, output: unknown): Promise<void>;
  sendTaskFailure(taskToken: string, error: string, cause: string): Promise<void>;
}

/** An approval request: who may decide, each with a link signed for that approver alone. */
export interface ApprovalRequest {
  approvalId: string;
  operationId: string;
  runId: string;
  toolName: string;
  requestedBy: string;
  /** One line for people (core/notices.ts `approvalSummary`); never a link. */
  summary: string;
  expiresAt: string;
  /** One per approver who may decide; a link is delivered only to the approver it is signed for. */
  links: { approverId: string; url: string }[];
  /** For approvers' own channels only (core/notices.ts `approverArguments`), never in a link-free notice. */
  inputHash?: string;
  approvalLines?: string[];
  arguments?: ArgumentField[];
  /**
   * Set when this is an `approvalEscalation` step rather than the first request: `escalated` asks these
   * approvers for the first time, `reminded` reminds those asked before (core/escalation.ts).
   */
  escalation?: { kind: 'escalated' | 'reminded'; step: number; afterMinutes: number };
}

/** An approval that ended: decided by an approver, or expired. Link-free. */
export interface ApprovalDecidedNotice {
  approvalId: string;
  operationId: string;
  runId: string;
  toolName: string;
  decision: 'approved' | 'rejected' | 'expired';
  decidedBy?: string;
}

/** A call that waited for an approval has settled (its envelope is fixed). Link-free. */
export interface ApprovalSettledNotice {
  approvalId: string;
  operationId: string;
  toolName: string;
}

/** An operation now waits for a reviewer's resolution (its outcome is unknown and cannot be reconciled). */
export interface ReviewNotice {
  operationId: string;
  runId: string;
  toolName: string;
  reason: string;
}

/**
 * Tells people that an operation waits for them, or that a wait ended: each approver through its own
 * channels (a webhook, a filtered SNS subscription), everyone else through link-free notices
 * (adapters/notifier.ts). Never throws for a delivery that failed: it is counted and logged there.
 */
export interface Notifier {
  approvalRequested(message: ApprovalRequest): Promise<void>;
  approvalDecided?(notice: ApprovalDecidedNotice): Promise<void>;
  /** An escalation step's request (`escalation` set) to its approvers only, on every channel that delivers links. */
  approvalEscalated?(message: ApprovalRequest): Promise<void>;
  reviewRequired?(notice: ReviewNotice): Promise<void>;
  /** Updates what was posted about the approval (Slack) with how the call ended. */
  approvalSettled?(notice: ApprovalSettledNotice): Promise<void>;
  /** Spend crossed a threshold of a limit: the run owner's webhook, and admins on every channel. */
  budgetThreshold?(notice: BudgetThresholdNotice): Promise<void>;
}

/** Current configuration; re-read when it changes, so revoked permissions take effect. */
export type ConfigSource = () => Promise<RunnerConfig & { approvalSecret: string }>;

export interface OnceKey {
  /** Whose keys these are (the principal), so two clients' keys never collide. */
  scope: string;
  key: string;
  payloadHash: string;
}

export type Guarded<T> = { kind: 'done'; value: T; replayed: boolean } | { kind: 'payload_mismatch' };

/** Runs a request at most once per (scope, key) while its record lives, and says whether this was a replay. */
export type OnceGuard = <T>(key: OnceKey, run: () => Promise<T>) => Promise<Guarded<T>>;

/**
 * Tells a waiting request that an operation changed, without polling the database: in-process where the
 * steps run beside the API (the embedded stack); elsewhere absent, and the waiter polls.
 */
export interface OperationWatch {
  /** Calls `listener` with every committed version of the operation until the returned function is called. */
  subscribe(operationId: string, listener: (op: OperationRecord) => void): () => void;
}

/** What an attempt's span says before the call: who, which attempt, how safe a resend is, under whose trace. */
export interface AttemptSpanStart {
  toolName: string;
  callId: string;
  operationId: string;
  runId: string;
  attempt: number;
  risk: Risk;
  /** The upstream receives the operation's idempotency key and dedupes by it. */
  idempotencyKeySent: boolean;
  /** Sending this attempt twice is harmless (a read, or a keyed upstream). */
  replaySafe: boolean;
  approval: 'not_required' | 'approved';
  /** What the call's policy decided at submission (an attempt runs only for a call that was allowed). */
  policyDecision: 'allow' | 'require_approval';
  /** The determining ids of the configured policies that decided it; absent where none are configured. */
  policyIds?: string[];
  approvalRequired: boolean;
  /** Who approved the call, where a person did. */
  approvalDecidedBy?: string;
  /** What the run may still spend, in cents, as this process last knew the run; absent when it did not. */
  budgetRemainingCents?: number;
  /** SHA-256 (hex) of the operation's idempotency key: never the key itself. */
  idempotencyKeySha256: string;
  /** The caller's W3C traceparent from the submission, when it sent one. */
  traceparent?: string;
}

/** What the attempt came to, for the span's end. */
export interface AttemptSpanEnd {
  outcome: Outcome;
  upstreamStatus?: number;
  latencyMs: number;
}

/** Spans for operators (OpenTelemetry locally and wherever OTLP is configured, X-Ray on AWS). */
export interface Telemetry {
  /** Runs one attempt inside an `execute_tool` span; `end` reads the span's outcome from the attempt's result. */
  attemptSpan<T>(start: AttemptSpanStart, attempt: () => Promise<T>, end: (result: T) => AttemptSpanEnd): Promise<T>;
}

/** Counters for dashboards (EMF on AWS, an in-process registry locally); names come from metric-names.ts. */
export interface Metrics {
  count(name: MetricName, dimensions: Record<string, string>, value?: number): void;
  /** Several counts of one write at once (on AWS one log line for all of them); absent: `count` each. */
  countAll?(samples: readonly { name: MetricName; dimensions: Record<string, string>; value: number }[]): void;
  /** Sets a gauge to an absolute value read from the store (replacing, never adding to, the last one). */
  gauge(name: MetricName, dimensions: Record<string, string>, value: number): void;
  /** Where the counts are kept in process (the embedded stack): what they are now. Absent where they are published. */
  snapshot?(): { name: MetricName; dimensions: Record<string, string>; value: number }[];
}

/**
 * Where what is too large for a record lives (results over 64 KiB, large arguments): an S3 bucket on AWS,
 * s3rver locally. Objects are written once under keys that name their operation, and expire with retention.
 */
export interface BlobStore {
  put(key: string, text: string): Promise<void>;
  /** The object's text; undefined when there is none (expired, never written). */
  get(key: string): Promise<string | undefined>;
}

/** Runs a process remembers for the next call's admission (steps/recent-runs.ts says why that is safe). */
export interface RecentRuns {
  get(runId: string): RunRecord | undefined;
  remember(run: RunRecord): void;
}

/** Which tool function an invocation runs. */
export type ToolAction = 'execute' | 'reconcile';

/**
 * Where tool code runs when it must not run with the runner's privileges: the `Tools` function of a
 * deployment with `toolIsolation: "function"` (adapters/tool-function.ts). It answers what the tool returned,
 * or throws what it threw (same name and fields), or an error of its own when the function could not run it.
 */
export interface ToolHost {
  /** Whether this host has the tool (the user's tools module; the runner's own MCP upstream tools stay with the runner). */
  hosts(toolName: string): boolean;
  run(call: { action: ToolAction; tool: string; operationId: string; arguments: string }, ctx: ToolContext): Promise<unknown>;
}

/**
 * Where the tools module is loaded instead of here (`Tools`): the tools' static description, and what a tool's
 * own code says of one call's arguments (asked once, at validation; the operation keeps the answer).
 */
export interface ToolDirectory {
  hosts(toolName: string): boolean;
  describe(): Promise<ToolDescription[]>;
  check(toolName: string, value: unknown): Promise<ArgumentsCheck>;
}

/** One sweeper invocation's share of the watch list: part `part` (from 0) of `parts`, each owning a range of its shards. */
export interface WatchPass {
  /** Entries due up to this time are visited. */
  now: string;
  part: number;
  parts: number;
  /** Visits running at once. */
  concurrency: number;
  /** Asked before each page of entries: false stops the walk where it is. */
  more(): boolean;
}

/** What a walk did: operations visited, and the due time of the oldest entry it left (stopped by `more`), if any. */
export interface WatchPassResult {
  visited: number;
  oldestDue?: string;
}

/**
 * The deployment's bound on requests that wait idle for work done elsewhere (an approval, a lock, another
 * function's attempt), shared by every process: each such wait holds a leased slot, or is not made.
 */
export interface WaitingPolls {
  /** A slot for `holder` until `until` (epoch ms, its lease: a holder that vanished frees it then); undefined when all are held. */
  take(holder: string, until: number, now: number): Promise<WaitingSlot | undefined>;
}

export interface WaitingSlot {
  /** Frees the slot if this holder still holds it. */
  release(): Promise<void>;
}

/** Everything a step touches outside the pure core; tests swap these without mocking frameworks. */
export interface Deps {
  store: Store;
  tools: ToolRegistry;
  config: ConfigSource;
  lifecycle: LifecyclePort;
  notifier: Notifier;
  now(): number;
  random(): number;
  /** Base URL of the API as approvers reach it, for approval links. */
  publicBaseUrl: string;
  /** Makes client-keyed requests (POST /v1/runs with Idempotency-Key) happen once (Powertools idempotency). */
  onceGuard?: OnceGuard;
  /** Where the runtime can abort an in-flight attempt on cancellation (embedded engine); absent on AWS. */
  abortSignalFor?(operationId: string): AbortSignal | undefined;
  watch?: OperationWatch;
  /** Large results and arguments; without it a result over 64 KiB cannot be recorded (`invalid_output`). */
  blobs?: BlobStore;
  telemetry?: Telemetry;
  metrics?: Metrics;
  recentRuns?: RecentRuns;
  /** The configured Cedar policies, loaded once per change; undefined when the configuration has none (roles and tool lists decide). */
  policies?: (config: PolicyConfig) => Promise<PolicyEvaluator | undefined>;
  /** Where tool code runs instead of this process (a deployment that isolates tools); absent: here. */
  toolHost?: ToolHost;
  /** With `toolHost`: where the tools' description and each call's check come from. */
  toolDirectory?: ToolDirectory;
  /** The bound on idle waits across processes (`TOOLRUNNER_MAX_WAITING_POLLS`); absent: every wait is made. */
  waitingPolls?: WaitingPolls;
  /** Where the runner's own lines go (core/log.ts); absent: the process's log. */
  log?: Log;
}

/** What a step or surface takes: the deps, with a store that offers only the roles it uses. */
export type WithStore<Roles> = Omit<Deps, 'store'> & { store: Roles };
