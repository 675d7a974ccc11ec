import { reserveModelCall, settleModelCall } from '../commands/model-calls';
import { ownRun } from './access';
import { ApiError } from './api-error';
import { pathId } from './request-input';
import type { RouteHandlers } from './route-call';

/** Model calls: reserved against the run's spend budget before the call, settled with their usage after it. */
export const modelCallHandlers = {
  reserveModelCall: async (call) => {
    // The body is parsed before the run is read: a malformed one never costs a store read.
    const body = await call.body();
    const run = await ownRun(call);
    const result = await reserveModelCall(call.deps, run, body);
    switch (result.kind) {
      case 'invalid':
        throw new ApiError(400, 'invalid_request', result.message);
      case 'conflict':
        throw new ApiError(409, 'request_id_conflict', 'this requestId was already used with another body');
      case 'run_closed':
        throw new ApiError(409, 'run_closed', 'the run was cancelled');
      case 'refused':
        return call.c.json(result.refusal, 200);
      case 'reserved':
        if (result.replayed) call.c.header('Idempotent-Replayed', 'true');
        return call.c.json({ modelCallId: result.modelCallId, reservedCents: result.reservedCents }, 201);
    }
  },

  settleModelCall: async (call) => {
    const body = await call.body();
    const run = await ownRun(call);
    const result = await settleModelCall(call.deps, run, pathId(call.c, 'modelCallId', 'model call'), body);
    if (result.kind === 'not_found') throw new ApiError(404, 'not_found', 'no such model call');
    if (result.kind === 'invalid_state') throw new ApiError(409, 'invalid_state', result.message);
    if (result.replayed) call.c.header('Idempotent-Replayed', 'true');
    return call.c.json(result.view, 200);
  },
} satisfies Partial<RouteHandlers>;
