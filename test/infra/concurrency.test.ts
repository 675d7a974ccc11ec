import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { idleWaitsAtMost, longestWaitSeconds, ToolRunner, ToolRunnerConcurrency, type ToolRunnerProps } from '../../infra/tool-runner';
import { AccountConcurrency, accountFromEnv, maxInstancesFromEnv } from '../../local/template/account-concurrency';

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
  it('reserves nothing by default: the API bounds its idle waits itself (2 waiting slots) and waits up to 25 s', () => {
    const { reserved, apiEnv, stage } = synth();
    expect(Object.values(reserved).filter((r) => r !== undefined)).toEqual([]);
    expect(apiEnv.TOOLRUNNER_MAX_WAITING_POLLS).toBe('2');
    expect(apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('25');
    expect(stage.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect(synth({ maxWaitingPolls: 7 }).apiEnv.TOOLRUNNER_MAX_WAITING_POLLS).toBe('7');
  });

  it('ToolRunnerConcurrency.RESERVED: the opt-in preset reserves 652 and sets the longest wait from ceiling / rate', () => {
    const { reserved, apiEnv } = synth({ concurrency: ToolRunnerConcurrency.RESERVED });
    expect(reserved).toMatchObject({ Execute: 100, Reconcile: 50, Sweeper: 2, Api: 500 });
    // Everything else shares the unreserved pool; Tools has no reservation of its own.
    for (const name of ['Validate', 'RequestApproval', 'ExpireApproval', 'Report', 'Handoff', 'Tools'])
      expect(reserved[name]).toBeUndefined();
    // 500 instances at 50 requests a second: a caller may wait 10 s; the ceiling bounds the waits, no slots.
    expect(apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('10');
    expect(apiEnv.TOOLRUNNER_MAX_WAITING_POLLS).toBeUndefined();
    // An account of AWS's default quota takes it with 248 reserved elsewhere, not 249.
    const preset = new Map(Object.entries(reserved).filter((e): e is [string, number] => e[1] !== undefined));
    expect(new AccountConcurrency({ quota: 1000, reservedElsewhere: 248 }, preset).unreserved).toBe(100);
    expect(() => new AccountConcurrency({ quota: 1000, reservedElsewhere: 249 }, preset)).toThrow(/minimum value of \[100\]/);
  });

  it('follows the props: a higher rate shortens the wait of a reserved API; false reserves nothing', () => {
    const faster = synth({ throttling: { rateLimit: 200, burstLimit: 400 }, concurrency: { api: 600, execute: 150 } });
    expect(faster.reserved).toMatchObject({ Execute: 150, Reconcile: 50, Sweeper: 2, Api: 600 });
    expect(faster.apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('3');
    const none = synth({ concurrency: false });
    expect(Object.values(none.reserved).filter((r) => r !== undefined)).toEqual([]);
    expect(none.apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('25');
  });

  it('refuses a reservation that is not a positive integer, a rate that is not positive, a bound that is not a count', () => {
    expect(() => synth({ concurrency: { execute: 0 } })).toThrow(/concurrency.execute must be a positive integer/);
    expect(() => synth({ concurrency: { api: 2.5 } })).toThrow(/concurrency.api must be a positive integer/);
    expect(() => synth({ throttling: { rateLimit: 0, burstLimit: 1 } })).toThrow(/rateLimit must be positive/);
    expect(() => synth({ maxWaitingPolls: 1.5 })).toThrow(/maxWaitingPolls must be an integer/);
  });

  it("without reservations the slots bound idle waits at any wait, so it is 25 s; the synth warns when the stage's rate keeps fewer waiting than the slots", () => {
    /** The synth's warnings about the waits. */
    const warnings = (props: Partial<ToolRunnerProps>) => {
      const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Waits');
      new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
      return Annotations.fromStack(stack)
        .findWarning('*', Match.stringLikeRegexp('longest wait|maxWaitingPolls'))
        .map((w) => String(w.entry.data));
    };
    // Little's law: 50 a second for 25 s could keep 1,250 waiting; the 2 slots are the bound.
    expect(idleWaitsAtMost(2, 50, longestWaitSeconds(undefined, 50))).toBe(2);
    expect(warnings({})).toEqual([]);
    expect(synth({ maxWaitingPolls: 300, throttling: { rateLimit: 20, burstLimit: 40 } }).apiEnv.TOOLRUNNER_MAX_WAIT_SECONDS).toBe('25');
    expect(warnings({ maxWaitingPolls: 300, throttling: { rateLimit: 20, burstLimit: 40 } })).toEqual([]);
    // 1 a second for 25 s keeps at most 25 waiting: 300 slots would never all be held, the rate is what bounds.
    expect(idleWaitsAtMost(300, 1, 25)).toBe(25);
    const over = warnings({ maxWaitingPolls: 300, throttling: { rateLimit: 1, burstLimit: 2 } });
    expect(over).toHaveLength(1);
    expect(over[0]).toMatch(/maxWaitingPolls is 300, but the stage's rate limit of 1 a second keeps at most 25 requests waiting 25 s/);
    // A wait under 2 s only comes from a reserved ceiling over a high rate: the warning stays.
    expect(warnings({ concurrency: { api: 100 }, throttling: { rateLimit: 200, burstLimit: 400 } })).toEqual([
      expect.stringMatching(/longest wait is 0 s/),
    ]);
  });

  it('longestWaitSeconds: ceiling over rate, at most 25, 25 without a ceiling', () => {
    expect(longestWaitSeconds(500, 50)).toBe(10);
    expect(longestWaitSeconds(10_000, 50)).toBe(25);
    expect(longestWaitSeconds(100, 200)).toBe(0);
    expect(longestWaitSeconds(undefined, 200)).toBe(25);
  });
});

describe('the account pool of template mode', () => {
  const preset = new Map([
    ['Execute', 100],
    ['Reconcile', 50],
    ['Sweeper', 2],
    ['Api', 500],
  ]);

  it('applies the reservations unscaled, with what is reserved elsewhere in the account', () => {
    const account = new AccountConcurrency(1000, preset);
    expect(Object.fromEntries(account.reservations)).toEqual({ Execute: 100, Reconcile: 50, Sweeper: 2, Api: 500 });
    expect(account.unreserved).toBe(348);
    expect(new AccountConcurrency({ quota: 1000, reservedElsewhere: 900 }, new Map()).unreserved).toBe(100);
    // Two runners with the preset in one account: 1,304 reserved, more than a quota of 1,000 can give.
    expect(() => new AccountConcurrency({ quota: 1000, reservedElsewhere: 652 }, preset)).toThrow(/minimum value of \[100\]/);
    expect(new AccountConcurrency({ quota: 2000, reservedElsewhere: 652 }, preset).unreserved).toBe(696);
  });

  it("refuses reservations that leave less than AWS's minimum (100, or the whole quota below 100) with AWS's message", () => {
    expect(() => new AccountConcurrency(1000, new Map([['Api', 950]]))).toThrow(
      "Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [100]",
    );
    expect(() => new AccountConcurrency(10, preset)).toThrow(/below its minimum value of \[10\]/);
    expect(() => new AccountConcurrency(50, new Map([['Sweeper', 1]]))).toThrow(/below its minimum value of \[50\]/);
    expect(new AccountConcurrency(10, new Map()).unreserved).toBe(10);
  });

  it('reads the account from the environment: quota, reserved elsewhere, instances a function here', () => {
    expect(accountFromEnv({})).toEqual({ quota: 50, reservedElsewhere: 0 });
    expect(accountFromEnv({ TOOLRUNNER_ACCOUNT_CONCURRENCY: '1000', TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE: '900' })).toEqual({
      quota: 1000,
      reservedElsewhere: 900,
    });
    expect(() => accountFromEnv({ TOOLRUNNER_ACCOUNT_CONCURRENCY: 'ten' })).toThrow(/TOOLRUNNER_ACCOUNT_CONCURRENCY/);
    expect(maxInstancesFromEnv({})).toBe(50);
    expect(maxInstancesFromEnv({ TOOLRUNNER_MAX_INSTANCES: '4' })).toBe(4);
  });

  it('throttles a reserved function at its reservation and the others at the unreserved rest, counting throttles', () => {
    const account = new AccountConcurrency(120, new Map([['Execute', 2]]));
    const execute = account.of('Execute');
    const [api, tools] = [account.of('Api'), account.of('Tools')];
    expect(execute.limit).toBe(2);
    expect([execute.tryAcquire(), execute.tryAcquire(), execute.tryAcquire()]).toEqual([true, true, false]);
    // The unreserved 118 are shared: what Api holds, Tools cannot have.
    for (let i = 0; i < 118; i++) expect(api.tryAcquire()).toBe(true);
    expect(tools.tryAcquire()).toBe(false);
    api.release();
    expect(tools.tryAcquire()).toBe(true);
    // Execute's own reservation is untouched by the others' load.
    execute.release();
    expect(execute.tryAcquire()).toBe(true);
    expect(account.throttlesByFunction()).toEqual({ Execute: 1, Tools: 1 });
  });
});
