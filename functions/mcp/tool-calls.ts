import { createHash } from 'node:crypto';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { canonicalJson, sha256 } from '../core/canonical';
import { type Envelope, type Operation, ToolRunnerError, type ToolRunnerClient } from '../client';
import { RunnerError } from '../core/errors';
import { defaultLog } from '../core/log';

/** The built-in tool that lets a model come back to a call that was still pending. */
export const CHECK_OPERATION_TOOL = 'toolrunner_check_operation';

export const CHECK_OPERATION: Tool = {
  name: CHECK_OPERATION_TOOL,
  description: 'Check a tool call that was still pending: returns its result once the runner has one, or that it is still pending.',
  inputSchema: {
    type: 'object',
    properties: { operationId: { type: 'string', description: 'The operationId a pending answer gave.' } },
    required: ['operationId'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
};

const CheckArguments = z.object({ operationId: z.string().min(1).max(200) });

/**
 * What serving one request of an MCP session needs: its id and run (from the verified session id), how to
 * reach the API as its caller, how long a call may wait. Nothing here outlives the request.
 */
export interface SessionContext extends CallTarget {
  sessionId: string;
}

/** `_meta` keys a client may set on `tools/call`. */
export const CallMeta = z.looseObject({
  'toolrunner/callId': z.string().min(1).max(128).optional(),
  'toolrunner/turn': z.number().int().min(0).optional(),
});

/** A client's mistake found here rather than by the API: invalid params (-32602) at either revision. */
export class InvalidParamsError extends RunnerError {
  override name = 'InvalidParamsError';
}

/**
 * The runner's keys of a `tools/call`'s `_meta`, honoured whole or refused: a bad turn that dropped the whole
 * `_meta` would also drop the client's callId, and a resend would then be a second call (a second charge).
 */
export function callMetaOf(meta: Record<string, unknown> | undefined): z.infer<typeof CallMeta> {
  const parsed = CallMeta.safeParse(meta ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new InvalidParamsError(`_meta["${String(issue.path[0])}"]: ${issue.message}`);
}

/**
 * What a reply's envelope may take: it is sent twice (as `structuredContent` and as JSON text, escaped), and a
 * Lambda response holds at most 6 MB, so a reply stays within 5 MiB whatever the tool returned.
 */
export const MCP_REPLY_MAX_BYTES = 5 * 1024 * 1024;

/**
 * The envelope as a `tools/call` result. A result too large for one reply is left out as `result_omitted`
 * (`GET /v1/operations/{operationId}` still has it, up to the tool's `maxResultBytes`).
 */
export function envelopeResult(envelope: Envelope, maxBytes = MCP_REPLY_MAX_BYTES): CallToolResult {
  const text = JSON.stringify(envelope);
  const fits = Buffer.byteLength(text) + Buffer.byteLength(JSON.stringify(text)) <= maxBytes;
  const sent: Envelope = fits || envelope.result === undefined ? envelope : withoutResult(envelope);
  return {
    content: [{ type: 'text', text: sent === envelope ? text : JSON.stringify(sent) }],
    structuredContent: sent as unknown as Record<string, unknown>,
    isError: sent.status !== 'succeeded',
  };
}

function withoutResult(envelope: Envelope): Envelope {
  const { result, ...rest } = envelope;
  // The same size and hash the runner gives a result over the tool's maxResultBytes: of its canonical JSON.
  const text = canonicalJson(result);
  return { ...rest, result_omitted: { bytes: Buffer.byteLength(text), sha256: sha256(text) } };
}

export function pendingResult(op: { operationId: string; state: string; statusUrl?: string }): CallToolResult {
  const pending = {
    status: 'pending',
    operationId: op.operationId,
    state: op.state,
    statusUrl: op.statusUrl ?? `/v1/operations/${op.operationId}`,
  };
  const why = op.state === 'awaiting_approval' ? 'It is waiting for a person to approve it.' : 'It is still running.';
  return {
    content: [
      {
        type: 'text',
        text: `${JSON.stringify(pending)}\n${why} Call ${CHECK_OPERATION_TOOL} with {"operationId":"${op.operationId}"} later to get its result; do not call the tool again.`,
      },
    ],
    structuredContent: pending,
    isError: false,
  };
}

/** A refusal the model reads as a failed call; a throttled one (a rate limit) says when to call again. */
function refusalResult(code: string, message: string, retryAfterSeconds?: number): CallToolResult {
  const error = { error: { code, message, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) } };
  return { content: [{ type: 'text', text: JSON.stringify(error) }], structuredContent: error, isError: true };
}

function operationResult(op: Operation): CallToolResult {
  return op.envelope ? envelopeResult(op.envelope as Envelope) : pendingResult(op);
}

/** Where a call is sent and how long it may wait: the run, the caller's API client, the wait. */
export interface CallTarget {
  runId: string;
  client: ToolRunnerClient;
  waitMs: number;
  /**
   * The deployment's bound on idle waits (the API's waiting slots): a pass for waiting up to `seconds` on
   * `operationId`, taken before this process waits on work done elsewhere; absent, nothing bounds the wait.
   */
  idleWait?: (operationId: string, seconds: number) => { take(): Promise<boolean>; release(): Promise<void> };
}

/** A call's answer: a result the model reads now, or the operation still pending (awaiting a person, or running on). */
export type CallOutcome = { kind: 'result'; result: CallToolResult } | { kind: 'pending'; op: Operation | PendingOperation };

type PendingOperation = { operationId: string; state: string; statusUrl?: string };

/**
 * One `tools/call` with its identity settled: submitted to the runner's API as the caller, then waited on
 * until it has an envelope, waits for a person, or the wait is over. A cancelled request cancels its operation.
 */
export async function runCall(
  target: CallTarget,
  call: { callId: string; turn: number; name: string; arguments: Record<string, unknown> },
  opts: { signal: AbortSignal; traceparent?: string },
): Promise<CallOutcome> {
  const deadline = Date.now() + target.waitMs;
  // The whole wait on the submission: a call that fits in it has its first attempt run in this very
  // invocation (no Express execution, no second function billed while the upstream answers). A cancellation
  // still ends the wait: it settles the operation, and the submission answers once the record says so.
  const submitted = await target.client.submitToolCall(target.runId, call, {
    waitSeconds: Math.floor(target.waitMs / 1000),
    traceparent: opts.traceparent,
  });
  if (submitted.kind === 'refused')
    return { kind: 'result', result: refusalResult(submitted.code, submitted.message, submitted.retryAfterSeconds) };
  if (submitted.kind === 'envelope') return { kind: 'result', result: envelopeResult(submitted.envelope) };
  if (opts.signal.aborted) return { kind: 'result', result: await cancelled(target.client, submitted.operationId) };
  if (submitted.state === 'awaiting_approval') return { kind: 'pending', op: submitted };
  // What is left of the wait is idle (the work runs elsewhere): it holds a waiting slot as the API's waits do,
  // and without one the call is answered pending now, as the API answers a poll that finds none.
  const left = deadline - Date.now();
  const pass = left > 0 ? target.idleWait?.(submitted.operationId, Math.ceil(left / 1000)) : undefined;
  if (pass && !(await pass.take())) return { kind: 'pending', op: submitted };
  let op: Operation;
  try {
    op = await target.client.watchOperation(submitted.operationId, { deadline, signal: opts.signal, stopWhenAwaitingApproval: true });
  } finally {
    await pass?.release();
  }
  if (opts.signal.aborted && !op.envelope) return { kind: 'result', result: await cancelled(target.client, op.operationId) };
  return op.envelope ? { kind: 'result', result: envelopeResult(op.envelope as Envelope) } : { kind: 'pending', op };
}

/** A 2025-11-25 `tools/call`: the callId from `_meta` or derived from the session and request id. */
export async function callTool(
  session: SessionContext,
  request: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
  extra: { requestId: string | number; signal: AbortSignal },
): Promise<CallToolResult> {
  if (request.name === CHECK_OPERATION_TOOL) return checkOperation(session.client, request.arguments);
  const { callId, turn } = await callIdentity(session, request, extra.requestId);
  const outcome = await runCall(session, { callId, turn, name: request.name, arguments: request.arguments ?? {} }, extra);
  return outcome.kind === 'result' ? outcome.result : pendingResult(outcome.op);
}

/**
 * The callId of a `tools/call` without `_meta["toolrunner/callId"]`: a hash of the session id and the JSON-RPC
 * request id. Stable, so a client's resend of the same request is a replay, and computable by any process,
 * so a `notifications/cancelled` naming the request finds its operation wherever it arrives. `1` and `"1"`
 * are different request ids and get different callIds.
 */
export function derivedCallId(sessionId: string, requestId: string | number): string {
  const digest = createHash('sha256')
    .update(`${sessionId}\n${JSON.stringify(requestId)}`)
    .digest('base64url');
  return `mcp_${digest.slice(0, 22)}`;
}

/**
 * The runner's callId and turn for one `tools/call`, from its `_meta` or derived. Without a turn in `_meta`
 * each call opens a new one, counted in the run's own record (its `usage.turns`), never in this process:
 * the session's next request may reach another process. Concurrent calls of one session may read the same
 * count and then share a turn.
 */
export async function callIdentity(
  session: SessionContext,
  request: { _meta?: Record<string, unknown> },
  requestId: string | number,
): Promise<{ callId: string; turn: number }> {
  const given = callMetaOf(request._meta);
  const callId = given['toolrunner/callId'] ?? derivedCallId(session.sessionId, requestId);
  const turn = given['toolrunner/turn'] ?? (await session.client.getRun(session.runId)).usage.turns + 1;
  return { callId, turn };
}

/** `notifications/cancelled` for a call in flight: exactly `POST /v1/operations/{id}/cancel`. */
async function cancelled(client: ToolRunnerClient, operationId: string): Promise<CallToolResult> {
  try {
    return operationResult(await client.cancelOperation(operationId));
  } catch {
    // Already finished: the client is gone anyway; the result stays recorded.
    return operationResult(await client.getOperation(operationId));
  }
}

export async function checkOperation(client: ToolRunnerClient, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
  const parsed = CheckArguments.safeParse(args ?? {});
  if (!parsed.success) return refusalResult('invalid_arguments', 'operationId is required');
  try {
    return operationResult(await client.getOperation(parsed.data.operationId));
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return refusalResult(code ?? 'unexpected', message);
  }
}

/**
 * The API's refusals, params the protocol's schema refuses and `InvalidParamsError` as invalid params
 * (`-32602`) with their plain message: a client's mistake is never an internal error. Anything else is
 * `-32603` with no detail leaving the process. `protocolError` builds the SDK's error of the revision served,
 * and `isProtocolError` tells one already built, which passes unchanged.
 */
export async function withProtocolErrors<T>(
  work: () => Promise<T>,
  protocolError: (code: number, message: string) => Error,
  isProtocolError: (error: unknown) => boolean,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isProtocolError(error)) throw error;
    if (error instanceof ToolRunnerError && error.status >= 400 && error.status < 500)
      throw protocolError(INVALID_PARAMS, `${error.code}: ${error.message}`);
    if (error instanceof InvalidParamsError) throw protocolError(INVALID_PARAMS, error.message);
    if (isSchemaError(error))
      throw protocolError(INVALID_PARAMS, error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    defaultLog().error('MCP request failed', { error: (error as Error).name, detail: (error as Error).message });
    throw protocolError(INTERNAL_ERROR, 'internal error');
  }
}

/**
 * A zod refusal of the request by the SDK's own schema. Told by name and shape, not `instanceof`: the SDK
 * may load another copy of zod than this module does (its core's error is `$ZodError`).
 */
function isSchemaError(error: unknown): error is { issues: { path: PropertyKey[]; message: string }[] } {
  return error instanceof Error && ['ZodError', '$ZodError'].includes(error.name) && Array.isArray((error as { issues?: unknown }).issues);
}

/** JSON-RPC's codes, the same at every revision. */
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
