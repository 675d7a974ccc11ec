import { createClient, type ClientOptions, type Envelope, type ToolRunnerClient } from '../client';

/**
 * What both framework adapters share: the run, the tool list, the policy preview, submission with the
 * framework's call id, and waiting for a person's decision made through the runner's approval link.
 */

export interface ToolrunnerOptions {
  /** The runner's API, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** An agent principal's bearer key. */
  key: string;
  /** Join this open run; by default a new run is created with default budgets. */
  runId?: string;
  budgets?: { maxTurns?: number; maxToolCalls?: number; maxWallClockSeconds?: number; maxSpendCents?: number };
  /** How long one tool call may wait for its result (a person's approval included); default 10 minutes. */
  callTimeoutMs?: number;
  /** How long to wait for an approver's decision; default one day (the runner's own expiry ends it sooner). */
  approvalTimeoutMs?: number;
  pollMs?: number;
  fetch?: ClientOptions['fetch'];
}

export interface RunnerTool {
  name: string;
  description: string;
  /** JSON Schema as OpenAI strict mode accepts it when `strict`, else the plain schema. */
  parameters: Record<string, unknown>;
  strict: boolean;
  /** Property names the tool really requires: the others may arrive as null from a strict-mode model. */
  required: string[];
}

/** What the model sees for one call: the runner's envelope, or the reason the runner refused the request. */
export type ModelVisibleResult =
  | Envelope
  | { status: 'pending'; operationId: string; state: string; message: string }
  | { error: { code: string; message: string } };

export class RunnerSession {
  private constructor(
    readonly runId: string,
    readonly client: ToolRunnerClient,
    private readonly options: ToolrunnerOptions,
  ) {}

  static async open(options: ToolrunnerOptions): Promise<RunnerSession> {
    const client = createClient({ baseUrl: options.baseUrl, apiKey: options.key, fetch: options.fetch });
    const runId = options.runId ?? (await client.createRun(options.budgets ? { budgets: options.budgets } : {})).runId;
    return new RunnerSession(runId, client, options);
  }

  /** The principal's tools, in OpenAI's function shape (strict where the runner can promise it). */
  async tools(): Promise<RunnerTool[]> {
    const [openai, neutral] = (await Promise.all([this.client.listTools('openai'), this.client.listTools('neutral')])) as [
      { function: { name: string; description: string; parameters: Record<string, unknown>; strict: boolean } }[],
      { name: string; inputSchema: { required?: string[] } }[],
    ];
    const required = new Map(neutral.map((t) => [t.name, t.inputSchema.required ?? []]));
    return openai.map(({ function: f }) => ({
      name: f.name,
      description: f.description,
      parameters: f.parameters,
      strict: f.strict,
      required: required.get(f.name) ?? [],
    }));
  }

  /** The framework's approval question, answered by the runner's policy through the preview route. */
  async needsApproval(tool: RunnerTool, input: unknown): Promise<boolean> {
    const preview = await this.client.previewToolCall(this.runId, { name: tool.name, arguments: argumentsOf(tool, input) });
    // A denied call is not the framework's to approve: it runs and the model reads the runner's refusal.
    return preview.decision === 'require_approval';
  }

  /** Submits the framework's call under its own call id and waits for what the model should read. */
  async call(tool: RunnerTool, callId: string, turn: number, input: unknown, signal?: AbortSignal): Promise<ModelVisibleResult> {
    const deadline = Date.now() + (this.options.callTimeoutMs ?? 600_000);
    const submitted = await this.client.submitToolCall(
      this.runId,
      { callId, turn, name: tool.name, arguments: argumentsOf(tool, input) },
      { waitSeconds: Math.min(25, (deadline - Date.now()) / 1000) },
    );
    if (submitted.kind === 'envelope') return submitted.envelope;
    if (submitted.kind === 'refused') return { error: { code: submitted.code, message: submitted.message } };
    const op = await this.client.watchOperation(submitted.operationId, { deadline, signal, maxPollMs: this.options.pollMs });
    if (op.envelope) return op.envelope as Envelope;
    if (signal?.aborted) {
      const cancelled = await this.client.cancelOperation(op.operationId).catch(() => op);
      if (cancelled.envelope) return cancelled.envelope as Envelope;
    }
    return { status: 'pending', operationId: op.operationId, state: op.state, message: 'the call has no result yet; do not repeat it' };
  }

  /**
   * For a call the framework holds for approval: proposes it to the runner (which notifies approvers with
   * a signed link) and waits for the person's decision. Rejected or refused: the envelope says why.
   */
  async awaitDecision(
    tool: RunnerTool,
    callId: string,
    turn: number,
    input: unknown,
  ): Promise<{ approved: true } | { approved: false; result: ModelVisibleResult }> {
    const submitted = await this.client.submitToolCall(
      this.runId,
      { callId, turn, name: tool.name, arguments: argumentsOf(tool, input) },
      { waitSeconds: 0 },
    );
    if (submitted.kind === 'refused') return { approved: false, result: { error: { code: submitted.code, message: submitted.message } } };
    if (submitted.kind === 'envelope')
      return submitted.envelope.status === 'succeeded' ? { approved: true } : { approved: false, result: submitted.envelope };
    const deadline = Date.now() + (this.options.approvalTimeoutMs ?? 86_400_000);
    for (;;) {
      const op = await this.client.getOperation(submitted.operationId);
      if (op.envelope)
        return op.envelope.status === 'succeeded' ? { approved: true } : { approved: false, result: op.envelope as Envelope };
      const decided = op.approval && op.approval.state !== 'pending';
      // Approved, or no approval was needed after all: the framework's execute step fetches the result.
      if ((decided && op.approval!.state === 'approved') || (!op.approval && op.state !== 'proposed' && op.state !== 'validated'))
        return { approved: true };
      if (Date.now() > deadline)
        return {
          approved: false,
          result: { status: 'pending', operationId: op.operationId, state: op.state, message: 'no approver decided in time' },
        };
      await new Promise((r) => setTimeout(r, this.options.pollMs ?? 250));
    }
  }
}

/** A strict-mode model sends null for an optional property it leaves out; the runner wants it absent. */
export function withoutNullOptionals(tool: Pick<RunnerTool, 'required'>, input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([k, v]) => v !== null || tool.required.includes(k)));
}

/** The arguments as the runner takes them: an object without a strict-mode model's nulls. */
function argumentsOf(tool: Pick<RunnerTool, 'required'>, input: unknown): Record<string, unknown> | string {
  return withoutNullOptionals(tool, input) as Record<string, unknown> | string;
}

/** What the model reads: the envelope (or refusal) as JSON text. */
export function modelText(result: ModelVisibleResult): string {
  return JSON.stringify(result);
}
