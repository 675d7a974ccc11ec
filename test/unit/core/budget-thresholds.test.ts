import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reserveModelCall } from '../../../functions/commands/model-calls';
import { createRun, submitToolCall } from '../../../functions/commands/submit';
import { makeNotifier, webhookChannel } from '../../../functions/adapters/notifier';
import type { BudgetThresholdNotice } from '../../../functions/core/budget-thresholds';
import { RunnerConfigSchema } from '../../../functions/core/config';
import type { Principal } from '../../../functions/core/model';
import type { Deps } from '../../../functions/core/ports';
import type { ToolSpec } from '../../../functions/core/tool-spec';
import { coreDeps, memoryStore } from '../../support/memory-store';

const spendTool: ToolSpec<{ cents: number }, object> = {
  name: 'spend',
  description: 'costs what it is told',
  inputSchema: z.strictObject({ cents: z.number().int().min(0) }),
  outputSchema: z.object({}),
  risk: 'read',
  timeoutMs: 1000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  costCents: (input) => input.cents,
  execute: async () => ({}),
};
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };

function setup(spendLimits?: unknown[]) {
  const clock = Date.parse('2026-12-07T10:00:00Z');
  const store = memoryStore(() => clock);
  const base = coreDeps(store, [spendTool as ToolSpec], () => clock);
  const config = RunnerConfigSchema.parse({
    principals: [{ id: 'agent', key: 'k'.repeat(16), roles: ['agent'], tools: '*' }],
    approvalSecret: 's'.repeat(32),
    modelPrices: { 'acme/m': { inputPerMillionCents: 1_000_000, outputPerMillionCents: 1_000_000 } },
    ...(spendLimits ? { spendLimits } : {}),
  });
  const told: BudgetThresholdNotice[] = [];
  const counted: unknown[] = [];
  const deps = {
    ...base,
    config: async () => config,
    notifier: { approvalRequested: async () => undefined, budgetThreshold: async (n: BudgetThresholdNotice) => void told.push(n) },
    metrics: { count: (name: string, dimensions: unknown) => void counted.push({ name, dimensions }), gauge: () => undefined },
  } as unknown as Deps;
  const call = (runId: string, callId: string, cents: number) =>
    store.getRun(runId).then((run) => submitToolCall(deps, run!, agent, { callId, turn: 1, name: 'spend', arguments: { cents } }));
  const thresholds = async (runId: string) =>
    (await store.listEvents(runId)).filter((e) => e.type === 'budget.threshold').map((e) => e.detail);
  return { store, deps, call, told, counted, thresholds };
}

describe('budget.threshold', () => {
  it("tells each of 50%, 80% and 100% of a run's maxSpendCents once: trace, metric, notice", async () => {
    const t = setup();
    const run = await createRun(t.deps, agent, { maxSpendCents: 10 });
    for (const [i, cents] of [4, 1, 3, 1, 1, 0].entries()) await t.call(run.runId, `c${i}`, cents);
    expect(await t.thresholds(run.runId)).toEqual([
      { scope: 'run', percent: 50, limitCents: 10, spentCents: 5, principalId: 'agent' },
      { scope: 'run', percent: 80, limitCents: 10, spentCents: 8, principalId: 'agent' },
      { scope: 'run', percent: 100, limitCents: 10, spentCents: 10, principalId: 'agent' },
    ]);
    expect(t.counted.filter((c) => (c as { name: string }).name === 'BudgetThresholds')).toEqual(
      [50, 80, 100].map((p) => ({ name: 'BudgetThresholds', dimensions: { scope: 'run', percent: String(p) } })),
    );
    expect(t.told.map((n) => [n.scope, n.percent, n.runId])).toEqual([
      ['run', 50, run.runId],
      ['run', 80, run.runId],
      ['run', 100, run.runId],
    ]);
  });

  it("tells a principal's counter crossings once each under concurrent calls and reservations of two runs", async () => {
    const t = setup([{ principal: 'agent', perDayCents: 20 }]);
    const runs = [await createRun(t.deps, agent, { maxSpendCents: 1000 }), await createRun(t.deps, agent, { maxSpendCents: 1000 })];
    await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => t.call(runs[i % 2]!.runId, `c${i}`, 1)),
      ...Array.from({ length: 6 }, (_, i) =>
        reserveModelCall(t.deps, runs[i % 2]!, { requestId: `r${i}`, model: 'acme/m', inputTokens: 1, maxOutputTokens: 1 }),
      ),
    ]);
    const told = [...(await t.thresholds(runs[0]!.runId)), ...(await t.thresholds(runs[1]!.runId))].filter((d) => d?.scope === 'principal');
    expect(told.map((d) => d?.percent).sort()).toEqual([100, 50, 80]);
    expect(told.every((d) => d?.limitCents === 20 && d?.period === 'day' && d?.periodKey === '2026-12-07')).toBe(true);
    expect(t.told.filter((n) => n.scope === 'principal')).toHaveLength(3);
  });

  it("reaches the run owner's webhook and every admin's, signed, and no one else's", async () => {
    const posted: { url: string; body: unknown }[] = [];
    const notify = (name: string) => ({ webhookUrl: `http://127.0.0.1:9/${name}`, secret: `${name}-secret-0123456789` });
    const config = RunnerConfigSchema.parse({
      principals: [
        { id: 'agent', key: 'k'.repeat(16), roles: ['agent'], tools: '*', notify: notify('agent') },
        { id: 'boss', key: 'b'.repeat(16), roles: ['admin'], tools: [], notify: notify('boss') },
        { id: 'other', key: 'o'.repeat(16), roles: ['agent', 'approver'], tools: '*', notify: notify('other') },
      ],
      approvalSecret: 's'.repeat(32),
    });
    const notices: unknown[] = [];
    const notifier = makeNotifier([
      webhookChannel({
        config: async () => ({ ...config, approvalSecret: config.approvalSecret! }),
        fetch: (async (url: string, init: RequestInit) => {
          expect(new Headers(init.headers).get('toolrunner-signature')).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
          posted.push({ url, body: JSON.parse(String(init.body)) });
          return new Response(null, { status: 204 });
        }) as typeof fetch,
      }),
      {
        name: 'console',
        notice: async (n) => {
          notices.push(n);
          return 0;
        },
      },
    ]);
    const notice: BudgetThresholdNotice = {
      scope: 'run',
      percent: 80,
      limitCents: 10,
      spentCents: 8,
      runId: 'run_1',
      principalId: 'agent',
    };
    await notifier.budgetThreshold(notice);
    expect(posted.map((p) => p.url).sort()).toEqual(['http://127.0.0.1:9/agent', 'http://127.0.0.1:9/boss']);
    expect(posted[0]!.body).toEqual({ type: 'budget.threshold', ...notice });
    expect(notices).toEqual([{ type: 'budget.threshold', ...notice }]);
  });
});
