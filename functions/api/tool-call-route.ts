import { operationIdFor } from '../core/ids';
import { validTraceparent } from '../core/trace-context';
import { runsFirstAttemptInline, submitToolCall } from '../commands/submit';
import { LONGEST_WAIT_SECONDS } from '../http/wait';
import { ownRun } from './access';
import { ApiError } from './api-error';
import { deliveredEnvelope } from './deliver';
import { NO_SLOT_RETRY_AFTER_SECONDS, waitForSettled, waitingPass, watchOperation } from './long-poll';
import { assertArgumentsBounded } from './request-input';
import type { RouteHandlers } from './route-call';

const DEFAULT_WAIT_SECONDS = 10;

/** `Prefer: wait=N`, 0 to the deployment's longest wait (25 s locally), default 10 (or that longest, if shorter). */
export function preferredWaitSeconds(header: string | undefined, longest = LONGEST_WAIT_SECONDS): number {
  const match = header?.match(/(?:^|[;,\s])wait=(\d+)/);
  return Math.min(longest, match ? Math.max(0, Number(match[1])) : DEFAULT_WAIT_SECONDS);
}

/** `POST /v1/runs/{runId}/tool-calls`: submit, then wait for the envelope as long as the caller prefers and a slot allows. */
export const toolCallHandlers = {
  submitToolCall: async (request) => {
    const { c, deps, longestWaitSeconds } = request;
    // The body is bounded and parsed before the run is read: hostile input never costs a store read.
    const call = await request.body();
    assertArgumentsBounded(call.arguments);
    const run = await ownRun(request, { recent: true });
    const preferred = preferredWaitSeconds(c.req.header('prefer'), longestWaitSeconds);
    const operationId = operationIdFor(run.runId, call.callId);
    // A wait for work done elsewhere holds one of the deployment's waiting slots; a call whose first attempt this
    // process runs is working, and takes none. Without a slot the call is submitted as one that does not wait.
    const pass = waitingPass(deps, operationId, preferred);
    const working = preferred > 0 && runsFirstAttemptInline(deps, call.name, preferred);
    const waitSeconds = preferred > 0 && !working && !(await pass.take()) ? 0 : preferred;
    // Listening before submitting: no change the execution commits can slip past the wait, so no read is needed.
    const watcher = watchOperation(deps, operationId);
    try {
      const submitted = await submitToolCall(deps, run, c.get('principal'), call, {
        waitSeconds,
        traceparent: validTraceparent(c.req.header('traceparent')),
      });
      if (submitted.kind === 'conflict')
        throw new ApiError(409, 'call_id_conflict', 'this callId was already used with different arguments');
      if (submitted.kind === 'run_closed') throw new ApiError(409, 'run_closed', 'the run was cancelled');
      if (submitted.kind === 'throttled')
        return c.json({ error: { code: 'throttled', message: submitted.message } }, 429, {
          'Retry-After': String(submitted.retryAfterSeconds),
        });
      if (submitted.kind === 'replayed') c.header('Idempotent-Replayed', 'true');
      const op = await waitForSettled(
        deps,
        watcher,
        submitted.op,
        waitSeconds,
        submitted.kind === 'created' ? submitted.finished : undefined,
        submitted.kind === 'created' && submitted.inline ? undefined : pass,
      );
      const envelope = await deliveredEnvelope(deps, op);
      if (envelope) return c.json(envelope, 200);
      const pending = { operationId: op.operationId, state: op.state, statusUrl: `/v1/operations/${op.operationId}` };
      // Answered without the wait it asked for (every waiting slot held): when to poll again.
      return c.json(pending, 202, pass.refused ? { 'Retry-After': String(NO_SLOT_RETRY_AFTER_SECONDS) } : {});
    } finally {
      watcher.close();
      await pass.release();
    }
  },
} satisfies Partial<RouteHandlers>;
