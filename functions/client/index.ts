import { z } from 'zod';
import {
  ApprovalsSchema,
  DecisionResultSchema,
  EnvelopeSchema,
  ErrorSchema,
  ModelCallRefusedSchema,
  ModelCallReservedSchema,
  ModelCallSettledSchema,
  OperationSchema,
  PendingSchema,
  PreviewResultSchema,
  ReviewsSchema,
  RunSchema,
  RunsSchema,
  ToolsSchema,
  TraceSchema,
  type Approval,
  type CreateRunBody,
  type Operation,
  type Pending,
  type Run,
  type RunSummary,
  type TraceEventView,
} from '../http/schemas';
import type { Envelope } from '../core/envelope';
import { operationIdFor } from '../core/ids';
import { networkErrorMessage } from '../core/network-error';
import { RunnerError } from '../core/errors';

export type { Approval, CreateRunBody, Envelope, Operation, Pending, Run, RunSummary };
/** The id of the one logical operation a `(runId, callId)` names: the runner derives it, so a client can too. */
export { operationIdFor };
/** One event of a run's trace, in order (`seq`); arguments and results appear only as hashes or redacted summaries. */
export type TraceEvent = TraceEventView;
/** The shape `listTools` returns tool definitions in: the runner's own, or a provider's tool-definition shape. */
export type ToolFormat = 'neutral' | 'openai' | 'anthropic' | 'mcp';

/** An HTTP error from the runner (`{ error: { code, message } }`), or an answer the client cannot read. */
export class ToolRunnerError extends RunnerError {
  override name = 'ToolRunnerError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** A 429 `throttled` (a rate limit, config `rateLimits`): the seconds its `Retry-After` asks to wait. */
    readonly retryAfterSeconds?: number,
    /** `cause`: what the client caught (the network error, the JSON parse error). */
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Where the runner is and who is calling: the options of `createClient`. */
export interface ClientOptions {
  /** The runner's base URL, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** A principal's bearer key. */
  apiKey: string;
  /** Defaults to the global `fetch`. */
  fetch?: (url: string, init: RequestInit) => Promise<Response> | Response;
}

/** A model call to reserve before making it (`reserveModelCall`). */
export interface ModelCallReservation {
  /** The caller's id for this model call: the same id with the same body is the same reservation (a retry is safe). */
  requestId: string;
  /** `<provider>/<model>`, e.g. `openai/gpt-4o`. */
  model: string;
  /** The most output tokens the call may produce (reserved in full). */
  maxOutputTokens: number;
  /** The prompt's tokens, if known; absent, the model's whole context window is reserved. */
  inputTokens?: number;
}

/** What a model call used, to settle it (`settleModelCall`); cached input tokens are part of input tokens. */
export interface ModelCallUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
}

/**
 * What `reserveModelCall` returns: reserved (`replayed` when this requestId was reserved before), or refused
 * (`budget_exhausted`: the run's budget; `spend_limit`: a principal's limit) with nothing reserved and the run open.
 */
export type ModelCallReserveResult =
  | { status: 'reserved'; modelCallId: string; reservedCents: number; replayed: boolean }
  | { status: 'refused'; code: 'budget_exhausted' | 'spend_limit'; message: string };

/** What `settleModelCall` returns: the cents reserved and charged (`replayed` when this settlement was made before). */
export interface ModelCallSettlement {
  modelCallId: string;
  status: 'settled';
  model: string;
  reservedCents: number;
  chargedCents: number;
  replayed: boolean;
}

/** One tool call as a model proposed it, submitted with `callTool`. */
export interface ToolCall {
  /** The provider's call id: the same id with the same arguments is the same operation, never a second effect. */
  callId: string;
  /** The model turn the call belongs to (turns count against `maxTurns`). */
  turn: number;
  /** The registered tool's name. */
  name: string;
  /** An object, or the JSON string a model produced. */
  arguments: Record<string, unknown> | string;
}

/**
 * What `callTool` returns: the envelope once the operation is reported within the wait (`replayed` when the
 * same call was submitted before), or the operation still under way (awaiting approval, or past the wait).
 */
export type ToolCallResult =
  | { kind: 'envelope'; envelope: Envelope; replayed: boolean }
  | { kind: 'pending'; operationId: string; state: string; statusUrl: string };

/** The answer of the policy preview: what validation would decide, without creating an operation. */
export type Preview = z.infer<typeof PreviewResultSchema>;
/** An operation waiting for a person's resolution. */
export type Review = z.infer<typeof ReviewsSchema>['reviews'][number];

/** An approver's decision as the runner recorded it (`state`: `approved` or `rejected`). */
export type Decision = z.infer<typeof DecisionResultSchema>;
/** One page of runs, newest first; `nextCursor` names the next page when there may be more. */
export type RunsPage = z.infer<typeof RunsSchema>;

/**
 * A submission the runner refused as a request, as a value: 409 `call_id_conflict` or `run_closed`, or 429
 * `throttled` (over a rate limit: nothing was created; the same call may be sent again after `retryAfterSeconds`).
 */
export interface Refusal {
  kind: 'refused';
  status: number;
  code: string;
  message: string;
  /** For a 429: the seconds to wait before sending the call again. */
  retryAfterSeconds?: number;
}

/** How long and how `watchOperation` follows an operation. */
export interface WatchOptions {
  /** Give up and return the newest view at this time (epoch ms). */
  deadline: number;
  /** Stop early once aborted (a cancelled model call). */
  signal?: AbortSignal;
  /** Also stop when the operation waits for an approver's decision. */
  stopWhenAwaitingApproval?: boolean;
  /** The longest pause between reads (default 2 s); pauses start at 100 ms and double. */
  maxPollMs?: number;
}

const WAIT_MAX_SECONDS = 25;

/** A 429's `Retry-After` in seconds (the runner sends delta-seconds); undefined for other answers. */
function retryAfterOf(res: Response): number | undefined {
  if (res.status !== 429) return undefined;
  const seconds = Number(res.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** How a tool call is submitted: how long to wait for its envelope, and the W3C trace its spans join. */
export interface CallOptions {
  /** 0 to 25 (default 10); a deployed stack caps it (10 s by default). */
  waitSeconds?: number;
  /** A W3C `traceparent`: the call's spans become children of that span. */
  traceparent?: string;
}

/** A typed client for the runner's HTTP API; answers are checked with the API's own schemas. */
export function createClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const doFetch = options.fetch ?? fetch;

  async function request<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    init: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; headers: Headers; body: z.infer<S> }> {
    let res: Response;
    try {
      res = await doFetch(`${baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          accept: 'application/json',
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...init.headers,
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
    } catch (error) {
      throw new ToolRunnerError(0, 'network_error', networkErrorMessage(method, `${baseUrl}${path}`, error), undefined, { cause: error });
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch (error) {
      throw new ToolRunnerError(res.status, 'invalid_response', `${method} ${path}: the answer is not JSON (${res.status})`, undefined, {
        cause: error,
      });
    }
    if (!res.ok) {
      const error = ErrorSchema.safeParse(json);
      if (error.success) throw new ToolRunnerError(res.status, error.data.error.code, error.data.error.message, retryAfterOf(res));
      throw new ToolRunnerError(res.status, 'http_error', `${method} ${path}: HTTP ${res.status}`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new ToolRunnerError(
        res.status,
        'invalid_response',
        `${method} ${path}: unexpected answer: ${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
          .join('; ')}`,
      );
    }
    return { status: res.status, headers: res.headers, body: parsed.data };
  }

  const id = (value: string) => encodeURIComponent(value);

  async function decide(operationId: string, decision: 'approve' | 'reject', reason?: string): Promise<Decision> {
    const body = reason === undefined ? { decision } : { decision, reason };
    return (await request('POST', `/v1/operations/${id(operationId)}/approval`, DecisionResultSchema, { body })).body;
  }

  const client = {
    /**
     * Opens a run with optional budgets and metadata (`POST /v1/runs`). With an `idempotencyKey`, a retry (or any
     * request with the same key and body) gets the same run instead of a second one.
     */
    async createRun(body: CreateRunBody = {}, opts: { idempotencyKey?: string } = {}): Promise<Run> {
      const headers: Record<string, string> = opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {};
      return (await request('POST', '/v1/runs', RunSchema, { body, headers })).body;
    },
    /** The run with its status, budgets and usage (`GET /v1/runs/{runId}`). */
    async getRun(runId: string): Promise<Run> {
      return (await request('GET', `/v1/runs/${id(runId)}`, RunSchema)).body;
    },
    /** Closes the run; its in-flight operations are cancelled (late results are recorded, never reported). */
    async cancelRun(runId: string): Promise<Run> {
      return (await request('POST', `/v1/runs/${id(runId)}/cancel`, RunSchema)).body;
    },
    /**
     * Submits a tool call and waits up to `waitSeconds` (0 to 25, default 10; a deployed stack caps it, 10 s by default) for its envelope. The same
     * `callId` again answers the same operation (`replayed: true`); other arguments throw `call_id_conflict`.
     */
    async callTool(runId: string, call: ToolCall, opts: CallOptions = {}): Promise<ToolCallResult> {
      const wait = Math.min(WAIT_MAX_SECONDS, Math.max(0, Math.floor(opts.waitSeconds ?? 10)));
      const res = await request('POST', `/v1/runs/${id(runId)}/tool-calls`, z.union([EnvelopeSchema, PendingSchema]), {
        body: call,
        headers: { prefer: `wait=${wait}`, ...(opts.traceparent ? { traceparent: opts.traceparent } : {}) },
      });
      if (res.status === 202) {
        const pending = PendingSchema.parse(res.body);
        return { kind: 'pending', operationId: pending.operationId, state: pending.state, statusUrl: pending.statusUrl };
      }
      return {
        kind: 'envelope',
        envelope: EnvelopeSchema.parse(res.body) as Envelope,
        replayed: res.headers.get('idempotent-replayed') === 'true',
      };
    },
    /**
     * `callTool`, with the runner's refusal of the request (409 `call_id_conflict`, `run_closed`) as a value:
     * for agents that hand it back to the model, which can act on it, rather than fail the whole loop.
     */
    async submitToolCall(runId: string, call: ToolCall, opts: CallOptions = {}): Promise<ToolCallResult | Refusal> {
      try {
        return await client.callTool(runId, call, opts);
      } catch (error) {
        if (error instanceof ToolRunnerError && error.status === 409)
          return { kind: 'refused', status: 409, code: error.code, message: error.message };
        if (error instanceof ToolRunnerError && error.status === 429)
          return { kind: 'refused', status: 429, code: error.code, message: error.message, retryAfterSeconds: error.retryAfterSeconds };
        throw error;
      }
    },
    /**
     * Reserves a model call's most it can cost against the run's spend budget before making it
     * (`POST /v1/runs/{runId}/model-calls`). A refusal is a value; a model with no price throws `invalid_request`.
     */
    async reserveModelCall(runId: string, reservation: ModelCallReservation): Promise<ModelCallReserveResult> {
      const res = await request('POST', `/v1/runs/${id(runId)}/model-calls`, z.union([ModelCallReservedSchema, ModelCallRefusedSchema]), {
        body: reservation,
      });
      if (res.status === 200) {
        const refused = ModelCallRefusedSchema.parse(res.body);
        return { status: 'refused', code: refused.code, message: refused.message };
      }
      const reserved = ModelCallReservedSchema.parse(res.body);
      return {
        status: 'reserved',
        modelCallId: reserved.modelCallId,
        reservedCents: reserved.reservedCents,
        replayed: res.headers.get('idempotent-replayed') === 'true',
      };
    },
    /**
     * Settles a reserved model call with what it used (`POST /v1/runs/{runId}/model-calls/{modelCallId}/usage`);
     * throws `invalid_state` (409) when settled before with other usage or after its lease ran out.
     */
    async settleModelCall(runId: string, modelCallId: string, usage: ModelCallUsage): Promise<ModelCallSettlement> {
      const res = await request('POST', `/v1/runs/${id(runId)}/model-calls/${id(modelCallId)}/usage`, ModelCallSettledSchema, {
        body: usage,
      });
      const settled = res.body;
      return {
        modelCallId: settled.modelCallId,
        status: 'settled',
        model: settled.model,
        reservedCents: settled.reservedCents,
        chargedCents: settled.chargedCents,
        replayed: res.headers.get('idempotent-replayed') === 'true',
      };
    },
    /** The operation record and, once reported, its envelope (`GET /v1/operations/{operationId}`). */
    async getOperation(operationId: string): Promise<Operation> {
      return (await request('GET', `/v1/operations/${id(operationId)}`, OperationSchema)).body;
    },
    /** The operation a call created, found by the run and the call's own id; undefined while none exists. */
    async findToolCall(runId: string, callId: string): Promise<Operation | undefined> {
      try {
        return await client.getOperation(operationIdFor(runId, callId));
      } catch (error) {
        if (error instanceof ToolRunnerError && error.status === 404) return undefined;
        throw error;
      }
    },
    /**
     * Polls the operation with growing pauses until it carries an envelope; throws `ToolRunnerError`
     * with code `timeout` (status 0) when `timeoutSeconds` (default 60) pass first.
     */
    async waitForOperation(operationId: string, opts: { timeoutSeconds?: number } = {}): Promise<Envelope> {
      const op = await client.watchOperation(operationId, { deadline: Date.now() + (opts.timeoutSeconds ?? 60) * 1000 });
      if (op.envelope) return op.envelope as Envelope;
      throw new ToolRunnerError(0, 'timeout', `operation ${operationId} is still ${op.state}`);
    },
    /**
     * Reads the operation with growing pauses until it carries an envelope (or waits for an approver, when
     * asked), the deadline passes or the signal aborts; returns the newest view either way.
     */
    async watchOperation(operationId: string, opts: WatchOptions): Promise<Operation> {
      let pauseMs = 100;
      for (;;) {
        const op = await client.getOperation(operationId);
        const awaitingPerson = op.state === 'awaiting_approval' && op.approval?.state === 'pending';
        const left = opts.deadline - Date.now();
        if (op.envelope || (awaitingPerson && opts.stopWhenAwaitingApproval) || left <= 0 || opts.signal?.aborted) return op;
        await pause(Math.min(pauseMs, left), opts.signal);
        pauseMs = Math.min(pauseMs * 2, opts.maxPollMs ?? 2000);
      }
    },
    /** Cancels one operation (`POST /v1/operations/{operationId}/cancel`); returns its record after the cancel. */
    async cancelOperation(operationId: string): Promise<Operation> {
      return (await request('POST', `/v1/operations/${id(operationId)}/cancel`, OperationSchema)).body;
    },
    /** The run's trace events, in order (`GET /v1/runs/{runId}/trace`). */
    async getTrace(runId: string): Promise<TraceEvent[]> {
      return (await request('GET', `/v1/runs/${id(runId)}/trace`, TraceSchema)).body.events;
    },
    /** The run's operations in the order they were proposed, read from its trace. */
    async operationIdsOfRun(runId: string): Promise<string[]> {
      return (await client.getTrace(runId)).filter((e) => e.type === 'operation.proposed' && e.operationId).map((e) => e.operationId!);
    },
    /** The caller's tools in a provider's tool-definition shape (default `neutral`). */
    async listTools(format: ToolFormat = 'neutral'): Promise<Record<string, unknown>[]> {
      return (await request('GET', `/v1/tools?format=${id(format)}`, ToolsSchema)).body.tools;
    },
    /** What validation would decide for this call (tool, schema, authorization, budget, approval), with no operation. */
    async previewToolCall(runId: string, call: { name: string; arguments: Record<string, unknown> | string }): Promise<Preview> {
      return (await request('POST', `/v1/runs/${id(runId)}/tool-calls/preview`, PreviewResultSchema, { body: call })).body;
    },
    /** Every pending approval the caller (an approver) may decide, oldest first: the API's pages followed to the end. */
    async listApprovals(): Promise<Approval[]> {
      const approvals: Approval[] = [];
      let cursor: string | undefined;
      do {
        const params = new URLSearchParams({ status: 'pending', limit: '100', ...(cursor ? { cursor } : {}) });
        const page = (await request('GET', `/v1/approvals?${params}`, ApprovalsSchema)).body;
        approvals.push(...page.approvals);
        cursor = page.nextCursor;
      } while (cursor);
      return approvals;
    },
    /**
     * Approves an operation that waits for a person (approver key): the signed link's decision, under the same
     * rules. 403 `forbidden` for its requester or its run's owner; 409 `invalid_state` once decided or expired.
     */
    async approve(operationId: string, opts: { reason?: string } = {}): Promise<Decision> {
      return decide(operationId, 'approve', opts.reason);
    },
    /** Rejects an operation that waits for a person (approver key); the same rules as `approve`. */
    async reject(operationId: string, opts: { reason?: string } = {}): Promise<Decision> {
      return decide(operationId, 'reject', opts.reason);
    },
    /** Operations waiting for a person's resolution (a reviewer's queue). */
    async listReviews(): Promise<Review[]> {
      return (await request('GET', '/v1/reviews?status=open', ReviewsSchema)).body.reviews;
    },
    /** Settles an `outcome_unknown` operation as a person found it upstream (reviewer key); 409 `invalid_state` otherwise. */
    async resolveReview(operationId: string, resolution: { outcome: 'succeeded' | 'failed'; note: string }): Promise<Operation> {
      return (await request('POST', `/v1/operations/${id(operationId)}/resolve`, OperationSchema, { body: resolution })).body;
    },
    /** Runs, newest first, one page (`limit` 1 to 100, default 50): an agent's own; every run for reviewers and admins. */
    async listRuns(query: { status?: Run['status']; limit?: number; cursor?: string } = {}): Promise<RunsPage> {
      const params = new URLSearchParams();
      if (query.status) params.set('status', query.status);
      if (query.limit !== undefined) params.set('limit', String(query.limit));
      if (query.cursor) params.set('cursor', query.cursor);
      const search = params.toString();
      return (await request('GET', `/v1/runs${search ? `?${search}` : ''}`, RunsSchema)).body;
    },
  };
  return client;
}

/** The client `createClient` returns: one method per route of the runner's HTTP API. */
export type ToolRunnerClient = ReturnType<typeof createClient>;

/** Resolves after `ms`, or at once when the signal aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
