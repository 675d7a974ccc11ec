import { z } from 'zod';
import type { Deps } from '../core/ports';
import { escalateWaitingApprovals } from '../steps/escalation';
import { publishGauges } from '../steps/gauges';
import { sweepPart } from '../steps/resume';
import { flushingTelemetry } from './flush-telemetry';
import { logger } from './observability';
import { lazyDeps } from './runtime';

/**
 * The schedule's input: which part of the watch this invocation owns (infra/tool-runner.ts makes one schedule
 * per part, so the parts run in parallel). Absent (an older schedule, a hand invocation): the whole watch.
 */
const SweepInput = z
  .object({ part: z.number().int().min(0).default(0), parts: z.number().int().min(1).default(1) })
  .refine((input) => input.part < input.parts, 'part must be below parts');

/** Work stops this long before the invocation's timeout: what is in flight finishes, the gauges go out, nothing is cut off. */
export const SWEEP_STOP_BEFORE_TIMEOUT_MS = 20_000;
/** Operation ids the log line names at most (the count is always whole). */
const LOGGED_IDS = 50;

/** Lambda's context as the sweeper uses it: the time left (absent when called by hand: one minute). */
type SweepContext = { getRemainingTimeInMillis?: () => number } | undefined;

/**
 * The sweeper's Lambda: walks its part of the watch until 20 s before its timeout (or until nothing is due),
 * resuming operations past their lease a few at a time, then publishes the gauges with what it left due.
 */
export function makeSweeper(deps: () => Deps = lazyDeps) {
  return flushingTelemetry(async (event: unknown, context?: SweepContext) => {
    const { part, parts } = SweepInput.parse(event ?? {});
    const remaining = context?.getRemainingTimeInMillis?.() ?? 60_000;
    const stopAt = Date.now() + remaining - SWEEP_STOP_BEFORE_TIMEOUT_MS;
    const out = await sweepPart(deps(), { part, parts, more: () => Date.now() < stopAt });
    if (out.resumed.length)
      logger.warn('resumed operations past their lease', {
        part,
        count: out.resumed.length,
        resumed: out.resumed.slice(0, LOGGED_IDS),
      });
    // Part 0 alone walks the pending approvals for their reminder and escalation steps (steps/escalation.ts).
    if (part === 0)
      await escalateWaitingApprovals(deps(), { more: () => Date.now() < stopAt }).catch((error: Error) =>
        logger.warn('approval escalation pass failed', { error: error.message }),
      );
    await publishGauges(deps(), { oldestDue: out.oldestDue });
    return { part, parts, visited: out.visited, resumed: out.resumed.length, ...(out.oldestDue ? { oldestDue: out.oldestDue } : {}) };
  });
}

export const handler = makeSweeper();
