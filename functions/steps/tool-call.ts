import { ensureError } from '../core/errors';
import type { ToolContext } from '../core/tool-spec';
import type { Deps } from './deps';

export interface ToolCallResult<T> {
  ok: boolean;
  value?: T;
  thrown?: unknown;
  latencyMs: number;
  upstreamStatus?: number;
}

/**
 * Runs one tool function under the attempt's deadline. For reads the signal also fires on cancellation
 * (where the runtime can deliver it), so the transport stops. A write in flight is left to finish: aborting
 * it cannot undo it and would only lose the knowledge of whether it happened; its result is recorded late.
 */
export async function callTool<T>(
  deps: Deps,
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
  };
  try {
    const value = await run(ctx);
    return { ok: true, value, latencyMs: deps.now() - started, upstreamStatus };
  } catch (thrown) {
    return { ok: false, thrown: ensureError(thrown), latencyMs: deps.now() - started, upstreamStatus };
  }
}
