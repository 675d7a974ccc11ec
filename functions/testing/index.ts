import type { Envelope } from '../core/envelope';
import type { ToolSpec } from '../core/tool-spec';
import type { TraceEvent } from '../core/trace';
import { CassetteMissError, type CassetteOptions, cassette } from './cassette';
import { type FaultScript, faultingFetch, type SeenRequest, scriptOf } from './faults';
import { inProcessRunner } from './in-process';

export type { CassetteOptions } from './cassette';
export { CassetteMissError, KEY_PLACEHOLDER } from './cassette';
export type { FaultName, FaultScript, ScriptedFault, SeenRequest } from './faults';
export { FAULTS } from './faults';
export { InProcessRunnerError } from './in-process';
export type { Envelope } from '../core/envelope';
export type { TraceEvent } from '../core/trace';

/** What `createTestRunner` takes. */
export interface TestRunnerOptions {
  // biome-ignore lint/suspicious/noExplicitAny: a tool list holds specs of every input and output type, as a tools module does.
  tools: ToolSpec<any, any>[];
  /** Faults scripted per call: by call id, the faults its tool's requests meet (see `FaultScript`). */
  faults?: Record<string, FaultScript>;
  /** Record the exchanges made through `ctx.fetch` to a file, or answer them from it. */
  cassette?: CassetteOptions;
}

/** What `call` takes besides the tool and its arguments. */
export interface CallOptions {
  /** The model's call id; the operation's id is derived from it. Default: `call_1`, `call_2`, … */
  callId?: string;
  /** This call's faults; replaces what `faults` in the runner's options says for its call id. */
  faults?: FaultScript;
}

/** One call's result: the envelope the model would get, and the call's trace. */
export interface CallResult {
  envelope: Envelope;
  trace: TraceEvent[];
  /** Every request the tool made through `ctx.fetch`, in order, with the fault injected on it. */
  requests: SeenRequest[];
}

/** The runner in a test: the same lifecycle as a deployment, in this process, over an in-memory store. */
export interface TestRunner {
  /**
   * Submits one call as a model would and runs it to its envelope: validation, attempts, retries,
   * reconciliation and the report, exactly as the runner does. Rejects with `CassetteMissError` when a
   * replayed cassette has no exchange for a request the tool made, naming that request.
   */
  call(tool: string, args: unknown, options?: CallOptions): Promise<CallResult>;
}

/**
 * A runner for your own tests (vitest, node:test…): `call` goes through the runner's engine in this
 * process, with faults injected in `ctx.fetch` per call and, optionally, a cassette that records the
 * upstream's answers once and replays them after. Backoffs and `Retry-After` waits take no real time; a
 * tool's `timeoutMs` does. Calls needing a person's approval are refused (`InProcessRunnerError`).
 *
 * @example
 * const runner = createTestRunner({ tools, faults: { call_1: ['response_lost'] } });
 * const { envelope, trace } = await runner.call('charge_card', { amount: 500, currency: 'USD', customer: 'cus_1' }, { callId: 'call_1' });
 */
export function createTestRunner(options: TestRunnerOptions): TestRunner {
  const engine = inProcessRunner(options.tools);
  const tape = options.cassette ? cassette(options.cassette) : undefined;
  const global = () => (input: Parameters<typeof fetch>[0], init?: RequestInit) => globalThis.fetch(input, init);
  let calls = 0;
  return {
    async call(tool, args, callOptions = {}) {
      const callId = callOptions.callId ?? `call_${++calls}`;
      const script = scriptOf(callOptions.faults ?? options.faults?.[callId]);
      const requests: SeenRequest[] = [];
      const missesBefore = tape?.misses.length ?? 0;
      const outcome = await engine.call(tool, args, callId, {
        fetchFor: faultingFetch(script, tape ? tape.fetchFor : global, requests),
        secondDelivery: script.some((f) => f.fault === 'second_delivery'),
      });
      const missed = tape?.misses.slice(missesBefore) ?? [];
      if (missed.length) throw new CassetteMissError(missed.join('; '));
      return { envelope: outcome.envelope, trace: outcome.trace, requests };
    },
  };
}
