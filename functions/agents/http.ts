import { createClient, ToolRunnerError, type Envelope, type Operation, type Preview } from '../client';

/**
 * The runner's HTTP API as the MCP server (in-process, through the Hono app) and the framework adapters
 * (over the network) use it: the typed client (`functions/client`), with a submission's refusal (409)
 * answered as a value, because both hand it back to a model rather than fail.
 */

export type FetchLike = (request: Request) => Promise<Response> | Response;
export type { Envelope, Preview };
export type OperationView = Operation;
export { ToolRunnerError as RunnerHttpError };

/** What a submission answered: the envelope, still in progress, or a refusal of the request itself. */
export type Submission =
  | { kind: 'reported'; envelope: Envelope; replayed: boolean }
  | { kind: 'pending'; operationId: string; state: string; statusUrl: string }
  | { kind: 'refused'; status: number; code: string; message: string };

type ToolArguments = Record<string, unknown> | string;

export interface RunnerHttp {
  createRun(body?: {
    budgets?: Record<string, number>;
    metadata?: Record<string, unknown>;
  }): ReturnType<ReturnType<typeof createClient>['createRun']>;
  getRun(runId: string): ReturnType<ReturnType<typeof createClient>['getRun']>;
  listTools<T = unknown>(format: string): Promise<T[]>;
  preview(runId: string, call: { name: string; arguments: unknown }): Promise<Preview>;
  submit(runId: string, call: { callId: string; turn: number; name: string; arguments: unknown }, waitSeconds: number): Promise<Submission>;
  getOperation(operationId: string): Promise<OperationView>;
  cancelOperation(operationId: string): Promise<OperationView>;
  /** The run's operations in the order they were proposed, read from its trace. */
  operationIdsOfRun(runId: string): Promise<string[]>;
}

export function runnerHttp(options: { baseUrl: string; key: string; fetch?: FetchLike }): RunnerHttp {
  const send = options.fetch;
  const client = createClient({
    baseUrl: options.baseUrl,
    apiKey: options.key,
    ...(send ? { fetch: async (url: string, init: RequestInit) => send(new Request(url, init)) } : {}),
  });
  return {
    createRun: (body = {}) => client.createRun(body),
    getRun: (runId) => client.getRun(runId),
    listTools: async <T>(format: string) => (await client.listTools(format as Parameters<typeof client.listTools>[0])) as T[],
    preview: (runId, call) => client.previewToolCall(runId, { name: call.name, arguments: call.arguments as ToolArguments }),
    async submit(runId, call, waitSeconds) {
      try {
        const answer = await client.callTool(runId, { ...call, arguments: call.arguments as ToolArguments }, { waitSeconds });
        return answer.kind === 'envelope' ? { kind: 'reported', envelope: answer.envelope, replayed: answer.replayed } : answer;
      } catch (error) {
        if (error instanceof ToolRunnerError && error.status === 409)
          return { kind: 'refused', status: 409, code: error.code, message: error.message };
        throw error;
      }
    },
    getOperation: (operationId) => client.getOperation(operationId),
    cancelOperation: (operationId) => client.cancelOperation(operationId),
    async operationIdsOfRun(runId) {
      return (await client.getTrace(runId)).filter((e) => e.type === 'operation.proposed' && e.operationId).map((e) => e.operationId!);
    },
  };
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
    if (op.envelope || (awaitingPerson && options.stopWhenAwaitingApproval) || Date.now() >= options.deadline || options.signal?.aborted)
      return op;
    await new Promise((r) => setTimeout(r, Math.min(options.pollMs ?? 200, Math.max(1, options.deadline - Date.now()))));
  }
}
