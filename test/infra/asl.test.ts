import { describe, expect, it } from 'vitest';
import { ASL_ERROR_NAMES } from '../../functions/core/errors';
import { readDefinition, readExpressDefinition } from '../../statemachines/definition';
import { EXPRESS_STARTED_AT, expressDefinition, STANDARD_ONLY } from '../../statemachines/express';

const asl = JSON.parse(readDefinition()) as { StartAt: string; States: Record<string, any> };
const states = Object.entries(asl.States);

describe('the lifecycle definition', () => {
  it('names in ErrorEquals only errors that exist: Step Functions and Lambda names, or error classes in code', () => {
    const names = new Set(
      states.flatMap(([, s]) => [...(s.Retry ?? []), ...(s.Catch ?? [])].flatMap((r: { ErrorEquals: string[] }) => r.ErrorEquals)),
    );
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
      const nexts = [
        s.Next,
        s.Default,
        ...(s.Choices ?? []).map((c: { Next: string }) => c.Next),
        ...(s.Catch ?? []).map((c: { Next: string }) => c.Next),
      ].filter(Boolean);
      for (const n of nexts) {
        if (reachable.has(n)) continue;
        reachable.add(n);
        queue.push(n);
      }
    }
    expect([...reachable].sort()).toEqual(Object.keys(asl.States).sort());
    for (const [name, s] of states) if (s.Type === 'Task') expect(s.TimeoutSeconds ?? s.TimeoutSecondsPath, name).toBeDefined();
  });

  it('has the lifecycle states of functions/core/lifecycle.ts', () => {
    for (const name of ['Validate', 'AwaitApproval', 'Execute', 'Reconcile', 'Report']) expect(asl.States[name]).toBeDefined();
    expect(asl.States.AwaitApproval.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
  });
});

describe('the Express variant', () => {
  const expressText = readExpressDefinition();
  const express = JSON.parse(expressText) as { StartAt: string; TimeoutSeconds: number; States: Record<string, any> };

  it('is generated from the Standard definition and current (npm run asl:express)', () => {
    expect(expressText).toBe(expressDefinition(readDefinition()));
  });

  it('shares every state it has with Standard unchanged, except Route, its own Handoff, and the start time Execute is told', () => {
    for (const [name, state] of Object.entries(express.States)) {
      if (name === 'Route' || name === 'Handoff') continue;
      if (name === 'Execute') {
        const { [EXPRESS_STARTED_AT]: startedAt, ...payload } = state.Parameters.Payload;
        expect(startedAt).toBe('$$.Execution.StartTime');
        expect({ ...state, Parameters: { ...state.Parameters, Payload: payload } }).toEqual(asl.States.Execute);
        continue;
      }
      expect(state, name).toEqual(asl.States[name]);
    }
    expect(express.StartAt).toBe(asl.StartAt);
    // Every Standard route is kept; only the person and the long waits go to Handoff.
    const targets = (d: { States: Record<string, any> }) =>
      d.States.Route.Choices.map((c: { StringEquals?: string; Next: string }) => c.StringEquals && [c.StringEquals, c.Next]).filter(
        Boolean,
      );
    for (const [next, target] of targets(asl)) {
      const mapped = targets(express).find(([n]: [string]) => n === next)?.[1];
      expect(mapped, next).toBe(STANDARD_ONLY.includes(target) ? 'Handoff' : target);
    }
  });

  it('hands to Standard what a step says could outlast the five minutes, before any other route', () => {
    const [first] = express.States.Route.Choices;
    expect(first).toEqual({
      And: [
        { Variable: '$.handoff', IsPresent: true },
        { Variable: '$.handoff', BooleanEquals: true },
      ],
      Next: 'Handoff',
    });
    expect(JSON.stringify(asl)).not.toContain('$.handoff');
  });

  it('fits Express: no task-token wait, and the whole execution within five minutes', () => {
    expect(JSON.stringify(express)).not.toContain('waitForTaskToken');
    expect(express.TimeoutSeconds).toBeLessThanOrEqual(300);
  });
});
