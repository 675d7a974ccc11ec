import { z } from 'zod';
import { EnvelopeSchema, ErrorSchema, PendingSchema, PreviewResultSchema as PreviewSchema } from '../api/schemas';

/**
 * A minimal client for the runner's HTTP API, used by the MCP server (in-process, through the Hono app)
 * and by the framework adapters (over the network). Only what they need; replies are checked with zod
 * at this boundary. The product's typed client can replace it without changing its callers.
 */

export type FetchLike = (request: Request) => Promise<Response> | Response;

export type Envelope = z.infer<typeof EnvelopeSchema>;

const RunSchema = z.looseObject({ runId: z.string(), status: z.string(), usage: z.looseObject({ turns: z.number() }) });
const OperationSchema = z.looseObject({
  operationId: z.string(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  runId: z.string(),
  callId: z.string(),
  state: z.string(),
  approval: z.looseObject({ approvalId: z.string(), state: z.string() }).optional(),
  envelope: EnvelopeSchema.optional(),
});
export type OperationView = z.infer<typeof OperationSchema>;
export type Preview = z.infer<typeof PreviewSchema>;

/** What a submission answered: the envelope, still in progress, or a refusal of the request itself. */
export type Submission =
  | { kind: 'reported'; envelope: Envelope; replayed: boolean }
  | { kind: 'pending'; operationId: string; state: string; statusUrl: string }
  | { kind: 'refused'; status: number; code: string; message: string };

export class RunnerHttpError extends Error {
  override name = 'RunnerHttpError';
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export interface RunnerHttp {
  createRun(body?: { budgets?: Record<string, number>; metadata?: Record<string, unknown> }): Promise<z.infer<typeof RunSchema>>;
  getRun(runId: string): Promise<z.infer<typeof RunSchema>>;
  listTools<T = unknown>(format: string): Promise<T[]>;
  preview(runId: string, call: { name: string; arguments: unknown }): Promise<Preview>;
  submit(runId: string, call: { callId: string; turn: number; name: string; arguments: unknown }, waitSeconds: number): Promise<Submission>;
  getOperation(operationId: string): Promise<OperationView>;
  cancelOperation(operationId: string): Promise<OperationView>;
  /** The run's operations in the order they were proposed, read from its trace. */
  operationIdsOfRun(runId: string): Promise<string[]>;
}

export function runnerHttp(options: { baseUrl: string; key: string; fetch?: FetchLike }): RunnerHttp {
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const base = options.baseUrl.replace(/\/$/, '');

  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown; headers: Headers }> {
    const response = await send(
      new Request(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${options.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, json, headers: response.headers };
  }

  function expectOk<T>(reply: { status: number; json: unknown }, schema: z.ZodType<T>, ok = [200]): T {
    if (!ok.includes(reply.status)) throw errorOf(reply);
    return schema.parse(reply.json);
  }

  return {
    async createRun(body = {}) {
      return expectOk(await call('POST', '/v1/runs', body), RunSchema, [201]);
    },
    async getRun(runId) {
      return expectOk(await call('GET', `/v1/runs/${encodeURIComponent(runId)}`), RunSchema);
    },
    async listTools<T>(format: string) {
      return expectOk(await call('GET', `/v1/tools?format=${encodeURIComponent(format)}`), z.object({ tools: z.array(z.unknown()) })).tools as T[];
    },
    async preview(runId, body) {
      return expectOk(await call('POST', `/v1/runs/${encodeURIComponent(runId)}/tool-calls/preview`, body), PreviewSchema);
    },
    async submit(runId, body, waitSeconds) {
      const reply = await call('POST', `/v1/runs/${encodeURIComponent(runId)}/tool-calls`, body, { prefer: `wait=${Math.max(0, Math.min(25, Math.floor(waitSeconds)))}` });
      if (reply.status === 200) return { kind: 'reported', envelope: EnvelopeSchema.parse(reply.json), replayed: reply.headers.get('idempotent-replayed') === 'true' };
      if (reply.status === 202) return { kind: 'pending', ...PendingSchema.parse(reply.json) };
      const error = errorOf(reply);
      if (reply.status === 409) return { kind: 'refused', status: 409, code: error.code, message: error.message };
      throw error;
    },
    async getOperation(operationId) {
      return expectOk(await call('GET', `/v1/operations/${encodeURIComponent(operationId)}`), OperationSchema);
    },
    async cancelOperation(operationId) {
      return expectOk(await call('POST', `/v1/operations/${encodeURIComponent(operationId)}/cancel`), OperationSchema);
    },
    async operationIdsOfRun(runId) {
      const trace = expectOk(await call('GET', `/v1/runs/${encodeURIComponent(runId)}/trace`), z.object({ events: z.array(z.looseObject({ type: z.string(), operationId: z.string().optional() })) }));
      return trace.events.filter((e) => e.type === 'operation.proposed' && e.operationId).map((e) => e.operationId!);
    },
  };
}

function errorOf(reply: { status: number; json: unknown }): RunnerHttpError {
  const parsed = ErrorSchema.safeParse(reply.json);
  return parsed.success ? new RunnerHttpError(reply.status, parsed.data.error.code, parsed.data.error.message) : new RunnerHttpError(reply.status, 'unexpected', `the runner answered HTTP ${reply.status}`);
}

/** Waits (polling with a deadline) until the operation has an envelope, waits for a person, or time is up. */
export async function waitForOperation(
  http: RunnerHttp,
  operationId: string,
  options: { deadline: number; signal?: AbortSignal; stopWhenAwaitingApproval?: boolean; pollMs?: number },
): Promise<OperationView> {
  for (;;) {
    const op = await http.getOperation(operationId);
    const awaitingPerson = op.state === 'awaiting_approval' && op.approval?.state === 'pending';
    if (op.envelope || (awaitingPerson && options.stopWhenAwaitingApproval) || Date.now() >= options.deadline || options.signal?.aborted) return op;
    await new Promise((r) => setTimeout(r, Math.min(options.pollMs ?? 200, Math.max(1, options.deadline - Date.now()))));
  }
}
