import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRun, submitToolCall } from '../../../functions/commands/submit';
import { previewCall } from '../../../functions/core/call-policy';
import { parseArguments } from '../../../functions/core/canonical';
import type { Principal } from '../../../functions/core/model';
import { coreDeps, memoryStore } from '../../support/memory-store';
import { toolSpec } from '../../support/records';

/**
 * The loop fuse counts the call as frozen (after the schema stripped extra keys and a null optional was dropped),
 * not as sent: otherwise a model repeating itself with a junk key or a null evades it.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
// A tool whose schema strips unknown keys (z.object), with an optional field a strict-mode model sends as null.
const lookup = toolSpec({
  name: 'lookup',
  risk: 'read',
  inputSchema: z.object({ q: z.string(), limit: z.number().int().optional() }),
  execute: async () => ({ id: 'r_1' }),
});

function harness() {
  const clock = Date.parse('2026-12-03T08:00:00Z');
  const store = memoryStore(() => clock);
  const deps = coreDeps(store, [lookup], () => clock);
  return { deps, store, now: clock };
}

describe('the loop fuse counts frozen arguments', () => {
  it('submission: calls differing only by an extra key or a null optional are the same call', async () => {
    const { deps, store } = harness();
    let run = await createRun(deps, agent, { maxIdenticalCalls: 2 });
    const sent = [{ q: 'a' }, { q: 'a', junk: 1 }, { q: 'a', limit: null }, { q: 'a', other: 'x', limit: null }];
    const outcomes: string[] = [];
    for (const [i, args] of sent.entries()) {
      const submitted = await submitToolCall(deps, run, agent, { callId: `call_${i}`, turn: 1, name: 'lookup', arguments: args });
      outcomes.push(
        submitted.kind === 'created'
          ? submitted.op.outcome?.kind === 'rejected'
            ? submitted.op.outcome.code
            : 'admitted'
          : submitted.kind,
      );
      run = (await store.getRun(run.runId))!;
    }
    expect(outcomes).toEqual(['admitted', 'admitted', 'loop_detected', 'loop_detected']);
    // Other arguments are another call.
    const other = await submitToolCall(deps, run, agent, { callId: 'call_b', turn: 1, name: 'lookup', arguments: { q: 'b', junk: 1 } });
    expect(other.kind === 'created' && other.op.outcome?.kind).not.toBe('rejected');
  });

  it('preview predicts the same', async () => {
    const { deps, store, now } = harness();
    let run = await createRun(deps, agent, { maxIdenticalCalls: 1 });
    await submitToolCall(deps, run, agent, { callId: 'call_1', turn: 1, name: 'lookup', arguments: { q: 'a' } });
    run = (await store.getRun(run.runId))!;
    const preview = (args: unknown) =>
      previewCall({
        tool: lookup,
        toolName: 'lookup',
        principal: agent,
        arguments: parseArguments(args),
        approvalTtlSeconds: 600,
        now,
        run,
        turn: 1,
      });
    expect(preview({ q: 'a', junk: true })).toMatchObject({ decision: 'deny', code: 'loop_detected' });
    expect(preview({ q: 'a', limit: null })).toMatchObject({ decision: 'deny', code: 'loop_detected' });
    expect(preview({ q: 'a', limit: 3 })).toMatchObject({ decision: 'allow' });
  });
});
