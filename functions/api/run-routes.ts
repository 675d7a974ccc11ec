import { hashValue } from '../core/canonical';
import { hasRole } from '../core/policy';
import { timelineModel } from '../core/timeline';
import { cancelRun } from '../commands/cancel';
import { createRun } from '../commands/submit';
import { PAGE_HEADERS, timelinePage } from '../html/timeline-page';
import { ListRunsQuerySchema } from '../http/schemas';
import { ownRun } from './access';
import { ApiError } from './api-error';
import { decodeCursor, RunListKeySchema } from './cursor';
import { previewToolCall } from './preview';
import { assertArgumentsBounded, queryOf } from './request-input';
import type { RouteHandlers } from './route-call';
import { listRunsPage } from './runs';
import { operationDetails, runView } from './views';

/** Runs: create, list, read, cancel; their trace as JSON and as a page; what a call into one would be decided. */
export const runHandlers = {
  createRun: async ({ c, deps, body }) => {
    const input = await body();
    const principal = c.get('principal');
    const key = c.req.header('idempotency-key');
    if (!key || !deps.onceGuard) return c.json(runView(await createRun(deps, principal, input.budgets, input.metadata), deps.now()), 201);
    if (key.length > 255) throw new ApiError(400, 'invalid_request', 'Idempotency-Key is longer than 255 characters');
    // A client retrying run creation after a timeout gets the same run, not a second one.
    const guarded = await deps.onceGuard(
      { scope: principal.id, key, payloadHash: hashValue(input) },
      async () => (await createRun(deps, principal, input.budgets, input.metadata)).runId,
    );
    if (guarded.kind === 'payload_mismatch')
      throw new ApiError(409, 'invalid_state', 'this Idempotency-Key was used with a different body');
    const run = await deps.store.getRun(guarded.value);
    if (!run) throw new ApiError(404, 'not_found', 'no such run');
    if (guarded.replayed) c.header('Idempotent-Replayed', 'true');
    // 201 either way, as the contract says; the header tells a replay.
    return c.json(runView(run, deps.now()), 201);
  },

  listRuns: async ({ c, deps }) => {
    const principal = c.get('principal');
    const query = queryOf(c, ListRunsQuerySchema);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, RunListKeySchema);
    if (query.cursor !== undefined && !after) throw new ApiError(400, 'invalid_request', 'cursor is not one this API handed out');
    return c.json(await listRunsPage(deps, principal, { status: query.status, limit: query.limit, after }));
  },

  getRun: async (call) => call.c.json(runView(await ownRun(call), call.deps.now())),

  cancelRun: async (call) => {
    const run = await ownRun(call);
    return call.c.json(runView(await cancelRun(call.deps, run), call.deps.now()));
  },

  getTrace: async (call) => {
    const run = await ownRun(call);
    return call.c.json({ events: await call.deps.store.listEvents(run.runId) });
  },

  // The trace for people: the same events as the JSON route, as a timeline page (GET with a bearer key).
  getTimeline: async (call) => {
    const { c, deps } = call;
    const run = await ownRun(call);
    const principal = c.get('principal');
    const [events, ops] = await Promise.all([deps.store.listEvents(run.runId), deps.store.listOperationsOfRun(run.runId)]);
    // Owners and admins see the data, masked; a reviewer of someone else's run sees hashes only.
    const seesData = principal.id === run.principalId || hasRole(principal, 'admin');
    const details = seesData
      ? Object.fromEntries(await Promise.all(ops.map(async (op) => [op.operationId, await operationDetails(deps, op)] as const)))
      : {};
    return c.html(timelinePage(timelineModel(events, details), principal.id), 200, PAGE_HEADERS);
  },

  previewToolCall: async (call) => {
    const input = await call.body();
    assertArgumentsBounded(input.arguments);
    const run = await ownRun(call);
    if (run.status === 'cancelled') throw new ApiError(409, 'run_closed', 'the run was cancelled');
    return call.c.json(await previewToolCall(call.deps, run, call.c.get('principal'), input));
  },
} satisfies Partial<RouteHandlers>;
