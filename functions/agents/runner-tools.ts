import { AGENT_RUN_MAX_IDENTICAL_CALLS } from '../core/budgets';
import { createClient, operationIdFor, type ClientOptions, type Envelope, type Operation, type ToolRunnerClient } from '../client';

/**
 * What both framework adapters share: the run, the tool list, the framework's approval question, submission
 * with the framework's call id, and reading a person's decision from the call's operation.
 *
 * The rule both keep: once a call exists at the runner, its operation decides (a decision made by an approver
 * is final, and an executed call is never reported to the model as denied); the policy preview answers only
 * before the call exists. When the preview says a person must approve, the call is submitted right away, so
 * at the framework's pause the operation exists and waits for its approver.
 */

export interface ToolrunnerOptions {
  /** The runner's API, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** An agent principal's bearer key. */
  key: string;
  /** Join this open run (to resume a paused agent, say); by default a new run is created. */
  runId?: string;
  budgets?: { maxTurns?: number; maxToolCalls?: number; maxWallClockSeconds?: number; maxSpendCents?: number };
  /** How long one tool call may wait for its result (a person's approval included); default 10 minutes. */
  callTimeoutMs?: number;
  /** How long the blocking helpers wait for an approver's decision; default one day (the runner's own expiry ends it sooner). */
  approvalTimeoutMs?: number;
  /** The longest pause between reads while waiting (default 2 s). */
  pollMs?: number;
  /** Defaults to the global `fetch`. */
  fetch?: ClientOptions['fetch'];
}

export interface RunnerTool {
  name: string;
  description: string;
  /** JSON Schema as OpenAI strict mode accepts it when `strict`, else the plain schema. */
  parameters: Record<string, unknown>;
  strict: boolean;
  /** Property names the tool really requires. */
  required: string[];
  /** Property names the tool declares but does not require: a strict-mode model sends null for one it leaves out. */
  optional: string[];
}

/** What the model sees for one call: the runner's envelope, or the reason the runner refused the request. */
export type ModelVisibleResult =
  | Envelope
  | { status: 'pending'; operationId: string; state: string; message: string }
  | { error: { code: string; message: string } };

/**
 * A person's decision at the runner on a call the framework holds for approval:
 * - `approved`: the framework runs the call and the model reads its envelope, whatever the call came to;
 * - `denied`: rejected, expired or cancelled before anyone approved; the model reads `result` (the envelope);
 * - `pending`: nobody decided yet (the framework stays paused);
 * - `undecided`: a wait for the approver ended before anyone decided. The framework lets the call through to
 *   the runner, which still holds it for its approver: the model reads `pending` with the operation id, never a
 *   denial (a denial would be false: the approver may still approve, and the call then runs).
 */
export type RunnerDecision =
  | { status: 'approved' }
  | { status: 'denied'; result: ModelVisibleResult }
  | { status: 'pending' }
  | { status: 'undecided'; operationId: string };

/** A call the framework holds for approval, with the runner's operation that waits for its approver. */
export interface PendingApproval {
  callId: string;
  toolName: string;
  operationId: string;
}

/** Reads the runner's decision from the call's operation alone (never from the preview). */
export function runnerDecision(op: Operation): RunnerDecision {
  if (op.approval?.state === 'approved') return { status: 'approved' };
  // The runner needed no person for this call after all: the framework runs it and the model reads what happened.
  if (!op.approval && op.state !== 'proposed' && op.state !== 'validated') return { status: 'approved' };
  if (op.envelope) return { status: 'denied', result: op.envelope as Envelope };
  return { status: 'pending' };
}

/** One run at the runner as both adapters use it: its tools, the approval question, submission and decisions. */
export class RunnerSession {
  private constructor(
    readonly runId: string,
    readonly client: ToolRunnerClient,
    private readonly options: ToolrunnerOptions,
  ) {}

  static async open(options: ToolrunnerOptions): Promise<RunnerSession> {
    const client = createClient({ baseUrl: options.baseUrl, apiKey: options.key, fetch: options.fetch });
    // The loop fuse is on unless the caller's budgets say otherwise.
    const budgets = { maxIdenticalCalls: AGENT_RUN_MAX_IDENTICAL_CALLS, ...options.budgets };
    const runId = options.runId ?? (await client.createRun({ budgets })).runId;
    return new RunnerSession(runId, client, options);
  }

  /** The principal's tools, in OpenAI's function shape (strict where the runner can promise it). */
  async tools(): Promise<RunnerTool[]> {
    const [openai, neutral] = (await Promise.all([this.client.listTools('openai'), this.client.listTools('neutral')])) as [
      { function: { name: string; description: string; parameters: Record<string, unknown>; strict: boolean } }[],
      { name: string; inputSchema: { required?: string[]; properties?: Record<string, unknown> } }[],
    ];
    const schemas = new Map(neutral.map((t) => [t.name, t.inputSchema]));
    return openai.map(({ function: f }) => ({
      name: f.name,
      description: f.description,
      parameters: f.parameters,
      strict: f.strict,
      ...fieldsOf(schemas.get(f.name)),
    }));
  }

  /** The operation of this run's call `callId`, or undefined while the call does not exist at the runner. */
  operationOf(callId: string): Promise<Operation | undefined> {
    return this.client.findToolCall(this.runId, callId);
  }

  /**
   * The framework's approval question. A call that exists answers from its operation: it asks a person
   * exactly when the runner asked one (frameworks ask again when they receive the decision, and the preview
   * would by then count the call itself against the budgets). A new call asks the preview; when a person must
   * approve, the call is submitted now and the operation waits for its approver while the framework pauses.
   */
  async needsApproval(tool: RunnerTool, callId: string, turn: number, input: unknown): Promise<boolean> {
    const existing = await this.operationOf(callId);
    if (existing) return existing.approval !== undefined;
    const args = argumentsOf(tool, input);
    const preview = await this.client.previewToolCall(this.runId, { name: tool.name, arguments: args });
    // A denied call is not the framework's to approve: it runs and the model reads the runner's refusal.
    if (preview.decision !== 'require_approval') return false;
    const submitted = await this.client.submitToolCall(
      this.runId,
      { callId, turn, name: tool.name, arguments: args },
      { waitSeconds: SUBMIT_WAIT_SECONDS },
    );
    // The submission decides, not the preview: a call that needs nobody after all runs, and the model reads its envelope.
    return submitted.kind === 'pending' && submitted.state === 'awaiting_approval';
  }

  /** Submits the framework's call under its own call id (a replay once it exists) and waits for what the model should read. */
  async call(tool: RunnerTool, callId: string, turn: number, input: unknown, signal?: AbortSignal): Promise<ModelVisibleResult> {
    const deadline = Date.now() + (this.options.callTimeoutMs ?? 600_000);
    const submitted = await this.client.submitToolCall(
      this.runId,
      { callId, turn, name: tool.name, arguments: argumentsOf(tool, input) },
      { waitSeconds: Math.min(SUBMIT_WAIT_SECONDS, (deadline - Date.now()) / 1000) },
    );
    if (submitted.kind === 'envelope') return submitted.envelope;
    if (submitted.kind === 'refused') return { error: { code: submitted.code, message: submitted.message } };
    if (submitted.state === 'awaiting_approval') {
      // Still held for a person (the framework's wait ended first, or it never paused): say so now rather than block.
      const held = await this.client.getOperation(submitted.operationId);
      if (held.approval?.state === 'pending') return waitingForApprover(held.operationId, held.state);
    }
    const op = await this.client.watchOperation(submitted.operationId, { deadline, signal, maxPollMs: this.options.pollMs });
    if (op.envelope) return op.envelope as Envelope;
    if (signal?.aborted) {
      const cancelled = await this.client.cancelOperation(op.operationId).catch(() => op);
      if (cancelled.envelope) return cancelled.envelope as Envelope;
    }
    return { status: 'pending', operationId: op.operationId, state: op.state, message: 'the call has no result yet; do not repeat it' };
  }

  /** The runner's decision on a held call, read now; a call the runner never received counts as pending. */
  async readDecision(callId: string): Promise<RunnerDecision> {
    const op = await this.operationOf(callId);
    return op ? runnerDecision(op) : { status: 'pending' };
  }

  /**
   * Waits (polling, up to `approvalTimeoutMs`) for a person's decision on a held call. A held call that
   * the runner never received (a framework that paused without asking `needsApproval` here) is submitted first.
   */
  async awaitDecision(tool: RunnerTool, callId: string, turn: number, input: unknown): Promise<RunnerDecision> {
    if (!(await this.operationOf(callId))) {
      const args = argumentsOf(tool, input);
      const submitted = await this.client.submitToolCall(
        this.runId,
        { callId, turn, name: tool.name, arguments: args },
        { waitSeconds: 0 },
      );
      // Refused as a request (the run closed): nothing to approve; the model reads the refusal.
      if (submitted.kind === 'refused')
        return { status: 'denied', result: { error: { code: submitted.code, message: submitted.message } } };
    }
    const deadline = Date.now() + (this.options.approvalTimeoutMs ?? 86_400_000);
    let pauseMs = 100;
    for (;;) {
      const decision = await this.readDecision(callId);
      if (decision.status !== 'pending') return decision;
      if (Date.now() >= deadline) return { status: 'undecided', operationId: this.operationIdOf(callId) };
      await new Promise((r) => setTimeout(r, Math.min(pauseMs, Math.max(0, deadline - Date.now()))));
      pauseMs = Math.min(pauseMs * 2, this.options.pollMs ?? 2000);
    }
  }

  /** The id of the operation a call of this run has (or will have) at the runner. */
  operationIdOf(callId: string): string {
    return operationIdFor(this.runId, callId);
  }
}

/** What the model reads for a call that waits for a person: pending, with the operation to ask about later. */
function waitingForApprover(operationId: string, state: string): ModelVisibleResult {
  return {
    status: 'pending',
    operationId,
    state,
    message: `the call waits for a person's approval at the runner (operation ${operationId}); do not repeat it: its result comes once an approver decides`,
  };
}

/** The longest a submission waits at the API (its `Prefer: wait` limit). */
const SUBMIT_WAIT_SECONDS = 25;

/** A strict-mode model sends null for an optional property it leaves out; the runner wants it absent. */
export function withoutNullOptionals(tool: Pick<RunnerTool, 'optional'>, input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  // Only a declared optional field's null means "absent": any other key goes to the runner as sent, which
  // refuses it as every other surface does.
  return Object.fromEntries(Object.entries(input).filter(([k, v]) => v !== null || !tool.optional.includes(k)));
}

/** The required and optional property names of a tool's neutral input schema. */
function fieldsOf(
  schema: { required?: string[]; properties?: Record<string, unknown> } | undefined,
): Pick<RunnerTool, 'required' | 'optional'> {
  const required = schema?.required ?? [];
  return { required, optional: Object.keys(schema?.properties ?? {}).filter((name) => !required.includes(name)) };
}

/** The arguments as the runner takes them: an object without a strict-mode model's nulls. */
function argumentsOf(tool: Pick<RunnerTool, 'optional'>, input: unknown): Record<string, unknown> | string {
  return withoutNullOptionals(tool, input) as Record<string, unknown> | string;
}

/** What the model reads: the envelope (or refusal) as JSON text. */
export function modelText(result: ModelVisibleResult): string {
  return JSON.stringify(result);
}
