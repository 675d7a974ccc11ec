import { TIMEOUT_GRACE_MS } from '../steps/tool-call';

/**
 * The faults an upstream shows a tool, injected in `ctx.fetch`:
 * - `response_lost`: the upstream got and processed the request; its answer never arrived (a reset).
 * - `connection_reset`: the connection broke before the request was sent; the upstream saw nothing.
 * - `unavailable`: the upstream answered 503.
 * - `rate_limited`: the upstream answered 429 with `Retry-After` (`retryAfterSeconds`, default 1).
 * - `slow_answer`: the upstream processed the request and answers only after the tool's `timeoutMs`.
 * - `duplicate_request`: the request reached the upstream twice (a retry below the tool), with the same key.
 * - `second_delivery`: not a request fault: the engine runs the attempt's step twice, as a duplicated
 *   invocation would.
 */
export const FAULTS = [
  'response_lost',
  'connection_reset',
  'unavailable',
  'rate_limited',
  'slow_answer',
  'duplicate_request',
  'second_delivery',
] as const;
/** One of `FAULTS`. */
export type FaultName = (typeof FAULTS)[number];

/** One fault for one call: which `execute` request of the call it hits (1-based, across attempts; default 1). */
export interface ScriptedFault {
  fault: FaultName;
  request?: number;
  retryAfterSeconds?: number;
}

/** A call's faults: names (each on the first request) or scripted faults. */
export type FaultScript = readonly (FaultName | ScriptedFault)[];

export function scriptOf(script: FaultScript | undefined): ScriptedFault[] {
  return (script ?? []).map((f) => (typeof f === 'string' ? { fault: f } : f));
}

/** One request a tool made through `ctx.fetch`, as the runner saw it. */
export interface SeenRequest {
  phase: 'execute' | 'reconcile';
  method: string;
  url: string;
  /** The fault injected on it, if any. */
  fault?: FaultName;
}

/** What a fetch layer knows about the request it is given. */
export interface FetchScope {
  phase: 'execute' | 'reconcile';
  idempotencyKey: string;
  /** The attempt's signal: a slow answer ends when it fires, whether or not the tool passed it to fetch. */
  signal: AbortSignal;
}

/** Node's own error for a connection that broke: `requestJson` and SDKs read `cause.code`. */
function connectionError(message: string): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code: 'ECONNRESET' }) });
}

function statusResponse(status: number, code: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error: { code, message: `injected ${status}` } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

function abortedBy(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fire = () => reject(signal.reason ?? new DOMException('The operation was aborted.', 'AbortError'));
    if (signal.aborted) fire();
    else signal.addEventListener('abort', fire, { once: true });
  });
}

/**
 * `ctx.fetch` for one call: counts its `execute` requests, injects the scripted faults on the ones they
 * name, and records every request. `next` is where a request goes when it goes anywhere (the global fetch,
 * or a cassette).
 */
export function faultingFetch(
  script: ScriptedFault[],
  next: (scope: FetchScope) => typeof fetch,
  seen: SeenRequest[],
): (scope: FetchScope) => typeof fetch {
  let executeRequests = 0;
  return (scope) => async (input, init) => {
    const request = new Request(input, init);
    const number = scope.phase === 'execute' ? ++executeRequests : 0;
    const injected =
      scope.phase === 'execute' ? script.find((f) => (f.request ?? 1) === number && f.fault !== 'second_delivery') : undefined;
    seen.push({ phase: scope.phase, method: request.method, url: request.url, ...(injected ? { fault: injected.fault } : {}) });
    const send = () => next(scope)(request.clone());
    switch (injected?.fault) {
      case undefined:
        return send();
      case 'connection_reset':
        throw connectionError('socket hang up before the request was written');
      case 'unavailable':
        return statusResponse(503, 'service_unavailable');
      case 'rate_limited':
        return statusResponse(429, 'rate_limited', { 'retry-after': String(injected.retryAfterSeconds ?? 1) });
      case 'response_lost': {
        const res = await send();
        await res.arrayBuffer().catch(() => undefined);
        throw connectionError('the connection was reset before the answer arrived');
      }
      case 'duplicate_request': {
        const first = await send();
        await first.arrayBuffer().catch(() => undefined);
        return send();
      }
      case 'slow_answer': {
        const answer = await send();
        // The answer is held until the attempt's time is up: a tool that passed its signal sees the abort;
        // one that did not gets the answer only well after the runner gave up on it.
        await abortedBy(request.signal.aborted ? request.signal : AbortSignal.any([request.signal, scope.signal])).catch((reason) => {
          if (request.signal.aborted) throw reason;
        });
        await new Promise((r) => setTimeout(r, 4 * TIMEOUT_GRACE_MS));
        return answer;
      }
      default:
        return send();
    }
  };
}
