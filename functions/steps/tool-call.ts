import { deepFreeze } from '../core/canonical';
import { ensureError, TransportError } from '../core/errors';
import type { ToolAction } from '../core/ports';
import type { ToolContext, ToolSpec } from '../core/tool-spec';
import { asAttempt } from './attempt-context';
import type { Deps } from './deps';

export interface ToolCallResult<T> {
  ok: boolean;
  value?: T;
  thrown?: unknown;
  latencyMs: number;
  upstreamStatus?: number;
}

/**
 * How long after `timeoutMs` the runner stops waiting for a tool that ignores its abort signal: long enough
 * for one that honours it to throw its own error first, well within the 1 s the README promises.
 */
export const TIMEOUT_GRACE_MS = 250;

/**
 * Runs one tool function under the attempt's deadline, enforced here whether or not the tool honours its
 * signal: at `timeoutMs` plus a short grace the attempt ends as a timeout after the request was sent (a read
 * is retried, a write's outcome is unknown and its policy reconciles it); what the tool does later is ignored. For reads the signal also fires on cancellation
 * (where the runtime can deliver it), so the transport stops. A write in flight is left to finish: aborting
 * it cannot undo it and would only lose the knowledge of whether it happened; its result is recorded late.
 */
export async function callTool<T>(
  deps: Pick<Deps, 'now' | 'abortSignalFor'>,
  operationId: string,
  base: { idempotencyKey: string; attempt: number; timeoutMs: number; abortOnCancel: boolean },
  run: (ctx: ToolContext) => Promise<T>,
): Promise<ToolCallResult<T>> {
  const started = deps.now();
  const signals = [AbortSignal.timeout(base.timeoutMs)];
  const external = base.abortOnCancel ? deps.abortSignalFor?.(operationId) : undefined;
  if (external) signals.push(external);
  let upstreamStatus: number | undefined;
  const ctx: ToolContext = {
    idempotencyKey: base.idempotencyKey,
    attempt: base.attempt,
    deadline: started + base.timeoutMs,
    signal: AbortSignal.any(signals),
    onUpstreamStatus: (status) => {
      upstreamStatus = status;
    },
    // Looked up per request, so a process-wide replacement of the global fetch (instrumentation) still applies.
    fetch: (input, init) => globalThis.fetch(input, init),
  };
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TransportError('timeout', true, `the tool did not answer within its timeout (${base.timeoutMs} ms)`)),
      base.timeoutMs + TIMEOUT_GRACE_MS,
    );
  });
  try {
    const value = await Promise.race([asAttempt({ operationId, attempt: base.attempt }, () => run(ctx)), overdue]);
    return { ok: true, value, latencyMs: deps.now() - started, upstreamStatus };
  } catch (thrown) {
    return { ok: false, thrown: ensureError(thrown), latencyMs: deps.now() - started, upstreamStatus };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The tool code of one attempt or lookup: in the `Tools` function when the deployment isolates tools and that
 * function holds this tool (the user's tools module), else in this process (`npm start`, `toolIsolation:
 * "none"`, and the runner's own MCP upstream tools). The remote side parses the recorded arguments itself.
 */
export function toolCode(
  deps: Pick<Deps, 'toolHost'>,
  tool: ToolSpec,
  action: ToolAction,
  call: { operationId: string; frozenArguments: string; input: unknown },
): (ctx: ToolContext) => Promise<unknown> {
  const host = deps.toolHost;
  if (host?.hosts(tool.name))
    return (ctx) => host.run({ action, tool: tool.name, operationId: call.operationId, arguments: call.frozenArguments }, ctx);
  return action === 'execute' ? (ctx) => tool.execute(ctx, call.input) : (ctx) => tool.reconcile!(ctx, call.input);
}

/**
 * The recorded arguments as the tool's code takes them: parsed by its schema here where the tool runs here;
 * where `Tools` hosts it, as recorded (they were parsed there at validation, and `Tools` parses them again).
 */
export function frozenInput(deps: Pick<Deps, 'toolHost'>, tool: ToolSpec, frozenArguments: string): unknown {
  const value: unknown = JSON.parse(frozenArguments);
  return deepFreeze(deps.toolHost?.hosts(tool.name) ? value : tool.inputSchema.parse(value));
}
