import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { longestWaitSeconds, ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';
import { AccountConcurrency, AWS_ACCOUNT_CONCURRENCY } from '../../local/template/account-concurrency';

type Resource = { Type: string; Properties: Record<string, any> };

/** Per function (by construct name): its reserved concurrency and environment; and the stage's throttling. */
function synth(props: Partial<ToolRunnerProps> = {}) {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Concurrency');
  new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
  const functions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
  const reserved = Object.fromEntries(
    functions.flatMap(([id, r]) => {
      const name = /^Runner(\w+?)Function[0-9A-F]{8}$/.exec(id)?.[1];
      return name ? [[name, r.Properties.ReservedConcurrentExecutions as number | undefined]] : [];
    }),
  );
  const api = functions.find(([id]) => id.startsWith('RunnerApiFunction'))![1];
  const stage = Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!;
  return { reserved, apiEnv: api.Properties.Environment.Variables as Record<string, string>, stage: stage.Properties };
}

describe('reserved concurrency and the API ceiling (the template)', () => {
  it('reserves instances for Execute, Reconcile and the sweeper, caps the API, and sets its longest wait from ceiling / rate', () => {
    const { reserved, apiEnv, stage } = synth();
    expect(reserved).toMatchObject({ Execute: 100, Reconcile: 50, Sweeper: 2, Api: 500 });
    // Everything else shares the unreserved pool.
    for (const name of ['Validate', 'RequestApproval', 'ExpireApproval', 'Report', 'Handoff', 'Tools'])
      expect(reserved[name]).toBeUndefined();
    const total = Object.values(reserved).reduce((a: number, b) => a + (b ?? 0), 0);
    // AWS refuses reservations that leave fewer than 100 of the default 1,000 unreserved.
    expect(AWS_ACCOUNT_CONCURRENCY - total).toBeGreaterThanOrEqual(100);
    expect(stage.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    // 500 instances at 50 requests a second: a caller may wait 10 s.
    expect(apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('10');
  });

  it('follows the props: a higher rate shortens the wait; concurrency false reserves nothing and waits 25 s', () => {
    const faster = synth({ throttling: { rateLimit: 200, burstLimit: 400 }, concurrency: { api: 600, execute: 150 } });
    expect(faster.reserved).toMatchObject({ Execute: 150, Reconcile: 50, Sweeper: 2, Api: 600 });
    expect(faster.apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('3');
    const none = synth({ concurrency: false });
    expect(Object.values(none.reserved).filter((r) => r !== undefined)).toEqual([]);
    expect(none.apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('25');
  });

  it('refuses a reservation that is not a positive integer, and a rate that is not positive', () => {
    expect(() => synth({ concurrency: { execute: 0 } })).toThrow(/concurrency.execute must be a positive integer/);
    expect(() => synth({ concurrency: { api: 2.5 } })).toThrow(/concurrency.api must be a positive integer/);
    expect(() => synth({ throttling: { rateLimit: 0, burstLimit: 1 } })).toThrow(/rateLimit must be positive/);
  });

  it('longestWaitSeconds: ceiling over rate, at most 25, 25 without a ceiling', () => {
    expect(longestWaitSeconds(500, 50)).toBe(10);
    expect(longestWaitSeconds(10_000, 50)).toBe(25);
    expect(longestWaitSeconds(100, 200)).toBe(0);
    expect(longestWaitSeconds(undefined, 200)).toBe(25);
  });
});

describe('the account pool of template mode', () => {
  const template = new Map([
    ['Execute', 100],
    ['Reconcile', 50],
    ['Sweeper', 2],
    ['Api', 500],
  ]);

  it('scales the template reservations to a smaller pool (at least 1 each) and keeps 10% unreserved', () => {
    const account = new AccountConcurrency(50, template);
    expect(Object.fromEntries(account.reservations)).toEqual({ Execute: 5, Reconcile: 3, Sweeper: 1, Api: 25 });
    expect(account.unreserved).toBe(16);
    expect(new AccountConcurrency(1000, template).unreserved).toBe(348);
  });

  it('refuses reservations that leave less than the unreserved minimum, as AWS does', () => {
    expect(() => new AccountConcurrency(1000, new Map([['Api', 950]]))).toThrow(/below its minimum value of \[100\]/);
    expect(() => new AccountConcurrency(5, template)).toThrow(/minimum value of \[1\]/);
  });

  it('throttles a reserved function at its reservation and the others at the unreserved rest, counting throttles', () => {
    const account = new AccountConcurrency(20, new Map([['Execute', 100]]));
    const execute = account.of('Execute');
    const [api, tools] = [account.of('Api'), account.of('Tools')];
    expect(execute.limit).toBe(2);
    expect([execute.tryAcquire(), execute.tryAcquire(), execute.tryAcquire()]).toEqual([true, true, false]);
    // The unreserved 18 are shared: what Api holds, Tools cannot have.
    for (let i = 0; i < 18; i++) expect(api.tryAcquire()).toBe(true);
    expect(tools.tryAcquire()).toBe(false);
    api.release();
    expect(tools.tryAcquire()).toBe(true);
    // Execute's own reservation is untouched by the others' load.
    execute.release();
    expect(execute.tryAcquire()).toBe(true);
    expect(account.throttlesByFunction()).toEqual({ Execute: 1, Tools: 1 });
  });
});
