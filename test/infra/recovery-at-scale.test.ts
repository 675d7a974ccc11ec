import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { WATCH_SHARDS } from '../../functions/adapters/dynamo-watch';
import { TABLES } from '../../functions/adapters/tables';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { RECOVERABLE_TABLES, SWEEPER_PARTS, ToolRunner, ToolRunnerConcurrency, type ToolRunnerProps } from '../../infra/tool-runner';
import { readDefinition, readExpressDefinition } from '../../statemachines/definition';

type Resource = { Type: string; Properties: Record<string, any> };

function synth(props: Partial<ToolRunnerProps> = {}) {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Recovery');
  new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  return { stack, resources: Template.fromStack(stack).toJSON().Resources as Record<string, Resource> };
}

type Retrier = {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
};

/** Seconds a retrier waits in all before it gives up, as Step Functions computes each interval (before jitter). */
function nominalSpan(r: Retrier): number {
  let total = 0;
  for (let i = 0; i < (r.MaxAttempts ?? 3); i++)
    total += Math.min((r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** i, r.MaxDelaySeconds ?? Number.POSITIVE_INFINITY);
  return total;
}

describe('a stack that recovers at scale (the template)', () => {
  it('backs off a throttled Lambda task for at least 30 s in every Task of both machines, even with full jitter', () => {
    for (const [machine, text] of [
      ['standard', readDefinition()],
      ['express', readExpressDefinition()],
    ] as const) {
      const states = Object.entries(JSON.parse(text).States as Record<string, { Type: string; Retry?: Retrier[] }>);
      for (const [name, state] of states.filter(([, s]) => s.Type === 'Task')) {
        const throttle = state.Retry?.find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'));
        expect(throttle, `${machine} ${name}`).toBeDefined();
        // Full jitter waits a random share of each interval: half of it on average.
        const expected = throttle!.JitterStrategy === 'FULL' ? nominalSpan(throttle!) / 2 : nominalSpan(throttle!);
        expect(expected, `${machine} ${name}`).toBeGreaterThanOrEqual(30);
      }
    }
  });

  it('runs the sweeper in parallel parts, one schedule a minute each, each owning a range of the watch shards', () => {
    const { resources } = synth();
    const schedules = Object.values(resources).filter((r) => r.Type === 'AWS::Scheduler::Schedule');
    expect(SWEEPER_PARTS).toBeGreaterThan(1);
    expect(SWEEPER_PARTS).toBeLessThanOrEqual(WATCH_SHARDS);
    expect(schedules.map((s) => JSON.parse(s.Properties.Target.Input)).sort((a, b) => a.part - b.part)).toEqual(
      Array.from({ length: SWEEPER_PARTS }, (_, part) => ({ part, parts: SWEEPER_PARTS })),
    );
    for (const s of schedules) expect(s.Properties.ScheduleExpression).toBe('rate(1 minute)');
  });

  it('keeps point-in-time recovery for the record and its watch only, not for locks or idempotency records', () => {
    const { resources } = synth();
    const tables = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::DynamoDB::Table');
    const recovered = tables
      .filter(([, r]) => r.Properties.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled === true)
      .map(([id]) => id.replace(/^Runner(\w+?)Table[0-9A-F]{8}$/, '$1').toLowerCase())
      .sort();
    expect(recovered).toEqual(['events', 'operations', 'runs', 'watch']);
    expect([...RECOVERABLE_TABLES].sort()).toEqual(recovered);
    expect(tables).toHaveLength(TABLES.length);
  });

  it('warns at synth when the stage rate makes the longest wait shorter than 2 s, and not otherwise', () => {
    const warnings = (props: Partial<ToolRunnerProps>) =>
      Annotations.fromStack(synth(props).stack)
        .findWarning('*', Match.stringLikeRegexp('longest wait'))
        .map((w) => String(w.entry.data));
    expect(warnings({})).toEqual([]);
    const reserved = { concurrency: ToolRunnerConcurrency.RESERVED };
    const short = warnings({ ...reserved, throttling: { rateLimit: 1000, burstLimit: 2000 } });
    expect(short).toHaveLength(1);
    expect(short[0]).toMatch(/longest wait is 0 s .*ceiling of 500 .*rate limit of 1000/);
    expect(warnings({ ...reserved, throttling: { rateLimit: 250, burstLimit: 500 } })).toEqual([]);
  });
});
