import { describe, expect, it } from 'vitest';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import type { RunnerConfig } from '../../functions/core/config';
import type { Principal } from '../../functions/core/model';
import type { ApprovalRequest } from '../../functions/core/ports';
import { requestApproval } from '../../functions/steps/approval';
import { makeSweeper } from '../../functions/handlers/sweeper';
import { escalateWaitingApprovals } from '../../functions/steps/escalation';
import { coreDeps, memoryStore } from '../support/memory-store';
import { toolSpec } from '../support/records';

/** The sweeper's escalation pass over the in-memory store: who is told what, once, as the clock moves. */
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const k = (c: string) => c.repeat(16);

function harness() {
  let clock = Date.parse('2026-12-07T08:00:00Z');
  const store = memoryStore(() => clock);
  const config: RunnerConfig & { approvalSecret: string } = {
    principals: [
      { id: 'agent', key: k('a'), roles: ['agent', 'approver'], tools: '*' },
      { id: 'alice', key: k('b'), roles: ['approver'], tools: [] },
      { id: 'bob', key: k('c'), roles: ['approver'], tools: [] },
      { id: 'root', key: k('d'), roles: ['admin'], tools: '*' },
    ],
    approvalSecret: k('s'),
    approvalTtlSeconds: 3600,
    approvalEscalation: [
      { afterMinutes: 10, principals: ['bob'] },
      { afterMinutes: 30, roles: ['admin'] },
    ],
  };
  const told: { kind: string; step?: number; to: string[] }[] = [];
  const record = (request: ApprovalRequest) =>
    told.push({
      kind: request.escalation?.kind ?? 'requested',
      step: request.escalation?.step,
      to: request.links.map((l) => l.approverId),
    });
  const deps = {
    ...coreDeps(store, [toolSpec({ name: 'charge', approval: 'always' })], () => clock),
    config: async () => config,
    notifier: {
      approvalRequested: async (r: ApprovalRequest) => void record(r),
      approvalEscalated: async (r: ApprovalRequest) => void record(r),
    },
  };
  const waiting = async () => {
    const run = await createRun(deps, agent, { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 7200 });
    const submitted = await submitToolCall(deps, run, agent, { callId: 'call_1', turn: 1, name: 'charge', arguments: { amount: 500 } });
    if (submitted.kind !== 'created') throw new Error(submitted.kind);
    await requestApproval(deps, submitted.op.operationId, 'token');
    return submitted.op.operationId;
  };
  return { deps, store, told, waiting, at: (minutes: number) => (clock = Date.parse('2026-12-07T08:00:00Z') + minutes * 60_000) };
}

describe('reminders and escalation of a waiting approval', () => {
  it('asks first those no step keeps back, then each step once, in order; never the requester', async () => {
    const { deps, store, told, waiting, at } = harness();
    const id = await waiting();
    expect(told).toEqual([{ kind: 'requested', step: undefined, to: ['alice'] }]);

    at(9);
    expect(await escalateWaitingApprovals(deps)).toEqual([]);
    at(10);
    // Two sweepers at once: one records the step and sends it, the other finds it recorded.
    const [a, b] = await Promise.all([escalateWaitingApprovals(deps), escalateWaitingApprovals(deps)]);
    expect([...a, ...b]).toEqual([{ operationId: id, step: 0, escalated: ['bob'], reminded: ['alice'] }]);
    expect(told.slice(1)).toEqual([
      { kind: 'escalated', step: 0, to: ['bob'] },
      { kind: 'reminded', step: 0, to: ['alice'] },
    ]);
    expect(await escalateWaitingApprovals(deps)).toEqual([]);

    at(45);
    expect(await escalateWaitingApprovals(deps)).toEqual([{ operationId: id, step: 1, escalated: ['root'], reminded: ['alice', 'bob'] }]);
    expect(told.slice(3)).toEqual([
      { kind: 'escalated', step: 1, to: ['root'] },
      { kind: 'reminded', step: 1, to: ['alice', 'bob'] },
    ]);
    at(59);
    expect(await escalateWaitingApprovals(deps)).toEqual([]);
    const op = await store.getOperation(id);
    expect(op?.approval?.escalations?.map((e) => [e.step, e.at])).toEqual([
      [0, '2026-12-07T08:10:00.000Z'],
      [1, '2026-12-07T08:45:00.000Z'],
    ]);
    const trace = (await store.listEvents(op!.runId)).filter((e) => e.type === 'approval.escalated' || e.type === 'approval.reminded');
    expect(trace.map((e) => [e.type, e.detail?.step, e.detail?.recipients])).toEqual([
      ['approval.escalated', 0, ['bob']],
      ['approval.reminded', 0, ['alice']],
      ['approval.escalated', 1, ['root']],
      ['approval.reminded', 1, ['alice', 'bob']],
    ]);
  });

  it('sends overdue steps one after another when the sweeper was away, and nothing after a decision', async () => {
    const { deps, told, waiting, at } = harness();
    const id = await waiting();
    at(40);
    expect((await escalateWaitingApprovals(deps)).map((l) => l.step)).toEqual([0, 1]);
    expect(told.map((t) => `${t.kind}:${t.step ?? ''}:${t.to.join('+')}`)).toEqual([
      'requested::alice',
      'escalated:0:bob',
      'reminded:0:alice',
      'escalated:1:root',
      'reminded:1:alice+bob',
    ]);
    expect(id).toBeTruthy();
  });

  it('does nothing without approvalEscalation', async () => {
    const { deps, told, waiting, at } = harness();
    const config = await deps.config();
    delete config.approvalEscalation;
    await waiting();
    at(50);
    expect(await escalateWaitingApprovals(deps)).toEqual([]);
    expect(told).toEqual([{ kind: 'requested', step: undefined, to: ['alice', 'bob', 'root'] }]);
  });

  it("is the sweeper Lambda's work in part 0 alone", async () => {
    const { deps, told, waiting, at } = harness();
    await waiting();
    at(10);
    const sweeper = makeSweeper(() => deps as never);
    await sweeper({ part: 1, parts: 2 });
    expect(told).toHaveLength(1);
    await sweeper({ part: 0, parts: 2 });
    expect(told.slice(1)).toEqual([
      { kind: 'escalated', step: 0, to: ['bob'] },
      { kind: 'reminded', step: 0, to: ['alice'] },
    ]);
  });
});
