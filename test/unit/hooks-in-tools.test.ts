import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { makeApp } from '../../functions/api/app';
import { previewToolCall } from '../../functions/api/preview';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import { checkArguments } from '../../functions/core/call-policy';
import type { Principal } from '../../functions/core/model';
import type { Deps, ToolDirectory, ToolHost } from '../../functions/core/ports';
import { describeTool } from '../../functions/core/tool-invocation';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { approvalPage } from '../../functions/html/approval-page';
import { executeAttempt } from '../../functions/steps/execute';
import { describedRegistry } from '../../functions/tools/described-tools';
import { coreDeps, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/**
 * Where tools are isolated, the runner's functions never load the tools module: they know the tools from
 * `Tools`' description and ask it once, at validation, what each hook says of a call's arguments. Here `Tools`
 * is the real tool code behind a directory and a host that count what they are asked; the runner's side holds
 * only the described specs, whose hooks refuse to run.
 */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const budgets = { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 };

function harness() {
  const ran: string[] = [];
  const hook =
    <T>(name: string, answer: (input: { amount: number; order: string }) => T) =>
    (input: { amount: number; order: string }) => {
      ran.push(name);
      return answer(input);
    };
  const charge: ToolSpec<{ amount: number; order: string }, { id: string }> = toolSpec({
    inputSchema: z.object({ amount: z.number().int(), order: z.string() }),
    costCents: hook('costCents', (i) => i.amount),
    approval: hook('approval', (i) => i.amount >= 500),
    lockKey: hook('lockKey', (i) => i.order),
    describeForApproval: hook('describeForApproval', (i) => [`charge ${i.amount} for ${i.order}`]),
    execute: async () => ({ id: 'ch_1' }),
  });
  const inTools = makeRegistry([charge]);
  const asked: string[] = [];
  const directory: ToolDirectory = {
    hosts: (name) => inTools.has(name),
    describe: async () => {
      asked.push('describe');
      return [...inTools.values()].map((t) => JSON.parse(JSON.stringify(describeTool(t))));
    },
    check: async (name, value) => {
      asked.push(`check ${name}`);
      return JSON.parse(JSON.stringify(checkArguments(inTools.get(name)!, JSON.parse(JSON.stringify(value)))));
    },
  };
  const host: ToolHost = {
    hosts: (name) => inTools.has(name),
    run: async (call, ctx) => {
      asked.push(`${call.action} ${call.tool}`);
      const tool = inTools.get(call.tool)!;
      return tool.execute(ctx, tool.inputSchema.parse(JSON.parse(call.arguments)));
    },
  };
  const clock = Date.parse('2026-12-07T09:00:00Z');
  const store = memoryStore(() => clock);
  const locks: string[] = [];
  const acquireLock = store.acquireLock.bind(store);
  store.acquireLock = async (key, ...rest) => {
    locks.push(key);
    return acquireLock(key, ...rest);
  };
  const deps: Deps = {
    ...coreDeps(store, [], () => clock),
    tools: describedRegistry(directory.describe),
    toolDirectory: directory,
    toolHost: host,
  };
  return { deps, store, ran, asked, locks };
}

describe('hooks answered by Tools at validation, stored with the operation', () => {
  it('submission asks Tools once and stores the frozen arguments, cost, approval, lock key and approval lines', async () => {
    const { deps, ran, asked } = harness();
    const run = await createRun(deps, agent, budgets);
    const submitted = await submitToolCall(deps, run, agent, {
      callId: 'call_big',
      turn: 1,
      name: 'charge_card',
      arguments: { amount: 900, order: 'ord_7' },
    });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    expect(asked).toEqual(['describe', 'check charge_card']);
    expect(ran.sort()).toEqual(['approval', 'costCents', 'describeForApproval', 'lockKey']);
    expect(submitted.op).toMatchObject({
      state: 'validated',
      frozenArguments: '{"amount":900,"order":"ord_7"}',
      costCents: 900,
      approvalRequired: true,
      lockKey: 'charge_card:ord_7',
      approvalLines: ['charge 900 for ord_7'],
    });
    // The approval page shows the stored lines: the runner's side has no hook to ask.
    const page = approvalPage(
      { ...submitted.op, approval: { approvalId: 'apr_1', state: 'pending', expiresAt: '2026-12-07T10:00:00Z' } } as never,
      'boss',
      'sig',
      '/decide',
    );
    expect(page).toContain('charge 900 for ord_7');
  });

  it('preview asks the same question and gives the same decision', async () => {
    const { deps, asked } = harness();
    const run = await createRun(deps, agent, budgets);
    const small = await previewToolCall(deps, run, agent, { name: 'charge_card', arguments: { amount: 10, order: 'ord_1' } });
    const big = await previewToolCall(deps, run, agent, { name: 'charge_card', arguments: { amount: 900, order: 'ord_1' } });
    expect([small.decision, big.decision]).toEqual(['allow', 'require_approval']);
    expect(asked).toEqual(['describe', 'check charge_card', 'check charge_card']);
  });

  it('the attempt takes the stored lock and runs in Tools; no hook runs again', async () => {
    const { deps, ran, asked, locks } = harness();
    const run = await createRun(deps, agent, budgets);
    const submitted = await submitToolCall(deps, run, agent, {
      callId: 'call_small',
      turn: 1,
      name: 'charge_card',
      arguments: { amount: 10, order: 'ord_9' },
    });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    const hooksAtValidation = ran.length;
    const { op } = await executeAttempt(deps, submitted.op.operationId);
    expect(op).toMatchObject({ state: 'reported', outcome: { kind: 'succeeded' }, costCents: 10 });
    expect(locks).toEqual(['charge_card:ord_9']);
    expect(ran.length).toBe(hooksAtValidation);
    expect(asked).toEqual(['describe', 'check charge_card', 'execute charge_card']);
  });

  it('an operation validated before the answers were kept asks Tools for its lock key, and locks', async () => {
    const { deps, store, asked, locks } = harness();
    const run = await createRun(deps, agent, budgets);
    const submitted = await submitToolCall(deps, run, agent, {
      callId: 'call_old',
      turn: 1,
      name: 'charge_card',
      arguments: { amount: 10, order: 'ord_5' },
    });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    // As an older version stored it: the frozen arguments, but neither the lock key nor the approval lines.
    const { lockKey: _lock, approvalLines: _lines, ...older } = submitted.op;
    store.ops.set(older.operationId, older);
    const { op } = await executeAttempt(deps, submitted.op.operationId);
    expect(op).toMatchObject({ state: 'reported', outcome: { kind: 'succeeded' } });
    expect(locks).toEqual(['charge_card:ord_5']);
    expect(asked).toEqual(['describe', 'check charge_card', 'check charge_card', 'execute charge_card']);
  });

  it('a described spec refuses to run a hook where the runner’s keys are', async () => {
    const { deps } = harness();
    await (deps.tools as ReturnType<typeof describedRegistry>).refresh();
    const spec = deps.tools.get('charge_card')!;
    expect(() => spec.costCents!({ amount: 1, order: 'o' })).toThrow(/runs in the Tools function only/);
    expect(() => spec.lockKey!({ amount: 1, order: 'o' })).toThrow(/runs in the Tools function only/);
  });
});

describe('when Tools cannot answer the check at validation', () => {
  it('the API answers 503 tools_unavailable with Retry-After, and nothing is created', async () => {
    const { deps, store } = harness();
    const failing: Deps = {
      ...deps,
      toolDirectory: {
        ...deps.toolDirectory!,
        check: async () => {
          throw new Error('Rate Exceeded.');
        },
      },
    };
    const key = 'agent-key-0123456789';
    const config = await deps.config();
    const withKey: Deps = {
      ...failing,
      config: async () => ({ ...config, principals: [{ ...agent, key }] }),
    };
    const run = await createRun(withKey, agent, budgets);
    const response = await makeApp(withKey).request(`/v1/runs/${run.runId}/tool-calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callId: 'call_1', turn: 1, name: 'charge_card', arguments: { amount: 10, order: 'ord_1' } }),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await response.json()).toEqual({
      error: { code: 'tools_unavailable', message: 'the tools function could not check the arguments of charge_card; send the call again' },
    });
    expect(await store.listOperationsOfRun(run.runId)).toEqual([]);
  });
});
