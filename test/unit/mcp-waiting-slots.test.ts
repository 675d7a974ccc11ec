import { describe, expect, it } from 'vitest';
import type { Operation, ToolRunnerClient } from '../../functions/client';
import { type CallTarget, runCall } from '../../functions/mcp/tool-calls';

const call = { callId: 'call_1', turn: 1, name: 'update_shipping_address', arguments: {} };
const running = { operationId: 'op_1', state: 'running', statusUrl: '/v1/operations/op_1' };

/** A client whose submission answers 202 at once (the work runs elsewhere); counts the reads of a watch. */
function fakeClient() {
  const seen = { watched: 0 };
  const client = {
    submitToolCall: async () => ({ kind: 'pending' as const, ...running }),
    watchOperation: async () => {
      seen.watched += 1;
      return { ...running, envelope: { ok: true } } as unknown as Operation;
    },
  } as unknown as ToolRunnerClient;
  return { client, seen };
}

/** Waiting slots of a deployment: `free` of them, recording what was taken and given back. */
function slots(free: number) {
  const log: string[] = [];
  let held = 0;
  const idleWait: NonNullable<CallTarget['idleWait']> = (operationId, seconds) => {
    let mine = false;
    return {
      async take() {
        if (held >= free) {
          log.push(`refused ${operationId}`);
          return false;
        }
        held += 1;
        mine = true;
        log.push(`took ${operationId} for ${seconds} s`);
        return true;
      },
      async release() {
        if (!mine) return;
        held -= 1;
        mine = false;
        log.push(`freed ${operationId}`);
      },
    };
  };
  return { idleWait, log };
}

describe("MCP's wait after a submission is an idle wait: it holds one of the API's waiting slots", () => {
  const opts = { signal: new AbortController().signal };

  it('with no slot free, answers pending at once, without watching the operation', async () => {
    const { client, seen } = fakeClient();
    const { idleWait, log } = slots(0);
    const outcome = await runCall({ runId: 'run_1', client, waitMs: 10_000, idleWait }, call, opts);
    expect(outcome).toEqual({ kind: 'pending', op: { kind: 'pending', ...running } });
    expect(seen.watched).toBe(0);
    expect(log).toEqual(['refused op_1']);
  });

  it('with a slot, watches within it and gives it back', async () => {
    const { client, seen } = fakeClient();
    const { idleWait, log } = slots(1);
    const outcome = await runCall({ runId: 'run_1', client, waitMs: 10_000, idleWait }, call, opts);
    expect(outcome.kind).toBe('result');
    expect(seen.watched).toBe(1);
    expect(log).toEqual(['took op_1 for 10 s', 'freed op_1']);
  });
});
