import { describe, expect, it } from 'vitest';
import { ASL_ERROR_NAMES } from '../../functions/core/errors';
import { readDefinition } from '../../statemachines/definition';

const asl = JSON.parse(readDefinition()) as { StartAt: string; States: Record<string, any> };
const states = Object.entries(asl.States);

describe('the lifecycle definition', () => {
  it('names in ErrorEquals only errors that exist: Step Functions and Lambda names, or error classes in code', () => {
    const names = new Set(states.flatMap(([, s]) => [...(s.Retry ?? []), ...(s.Catch ?? [])].flatMap((r: { ErrorEquals: string[] }) => r.ErrorEquals)));
    const ours = [...names].filter((n) => !n.startsWith('States.') && !n.startsWith('Lambda.'));
    expect(ours.length).toBeGreaterThan(0);
    for (const name of ours) expect(ASL_ERROR_NAMES).toContain(name);
  });

  it('gives every task-token wait a timeout and a Catch for States.Timeout', () => {
    const waits = states.filter(([, s]) => String(s.Resource).endsWith('.waitForTaskToken'));
    expect(waits.map(([n]) => n)).toEqual(['AwaitApproval']);
    for (const [, s] of waits) {
      expect(s.TimeoutSeconds ?? s.TimeoutSecondsPath).toBeDefined();
      expect(s.Catch.some((c: { ErrorEquals: string[] }) => c.ErrorEquals.includes('States.Timeout'))).toBe(true);
      expect(s.HeartbeatSeconds).toBeUndefined();
    }
  });

  it('uses JSONPath only and reaches every state', () => {
    expect(JSON.stringify(asl)).not.toContain('JSONata');
    const reachable = new Set<string>([asl.StartAt]);
    const queue = [asl.StartAt];
    while (queue.length) {
      const s = asl.States[queue.shift()!];
      const nexts = [s.Next, s.Default, ...(s.Choices ?? []).map((c: { Next: string }) => c.Next), ...(s.Catch ?? []).map((c: { Next: string }) => c.Next)].filter(Boolean);
      for (const n of nexts) if (!reachable.has(n)) (reachable.add(n), queue.push(n));
    }
    expect([...reachable].sort()).toEqual(Object.keys(asl.States).sort());
    for (const [name, s] of states) if (s.Type === 'Task') expect(s.TimeoutSeconds ?? s.TimeoutSecondsPath, name).toBeDefined();
  });

  it('has the normative lifecycle states', () => {
    for (const name of ['Validate', 'AwaitApproval', 'Execute', 'Reconcile', 'Record', 'Report']) expect(asl.States[name]).toBeDefined();
    expect(asl.States.AwaitApproval.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
  });
});
