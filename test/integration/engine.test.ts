import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StartSyncExecutionCommand,
  StopExecutionCommand,
  TaskDoesNotExist,
  ExecutionAlreadyExists,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIFECYCLE_FUNCTIONS, placeholderOf, readDefinition, substitute, type LifecycleFunction } from '../../statemachines/definition';
import { LocalStepFunctions } from '../../local/sfn-endpoint';

/** The real ASL on the embedded engine, with scripted functions: checks routing, waits, tokens and errors. */
const calls: { fn: string; payload: any }[] = [];
const script: Partial<Record<LifecycleFunction, (payload: any) => unknown>> = {};
let engine: LocalStepFunctions;
let sfn: SFNClient;
let definition: string;
const arn = (n: string) => `arn:aws:lambda:us-east-1:000000000000:function:${n}`;

beforeAll(async () => {
  definition = substitute(readDefinition(), Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), arn(n)])));
  const functions = Object.fromEntries(
    LIFECYCLE_FUNCTIONS.map((n) => [
      arn(n),
      async (payload: any) => {
        calls.push({ fn: n, payload });
        return (script[n] ?? (() => ({ operationId: payload.operationId, next: 'done' })))(payload);
      },
    ]),
  );
  engine = new LocalStepFunctions([{ name: 'toolrunner-invocation', definition, type: 'STANDARD' }], functions);
  sfn = new SFNClient({
    endpoint: await engine.listen(),
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  });
});
afterAll(async () => engine.close());

async function finished(executionArn: string) {
  for (let i = 0; i < 200; i++) {
    const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (d.status !== 'RUNNING') return d;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('execution did not finish');
}

describe('embedded Step Functions behind the real SDK', () => {
  it('enters at Route, then goes Validate → Backoff → Execute → Report as the steps say, and keeps history', async () => {
    calls.length = 0;
    // Validate holds the execution RUNNING until the duplicate starts below have been answered.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    script.Validate = async (p) => {
      await held;
      return { operationId: p.operationId, next: 'retry', delaySeconds: 0 };
    };
    script.Execute = (p) => ({ operationId: p.operationId, next: 'report' });
    script.Report = (p) => ({ operationId: p.operationId, next: 'done' });
    const started = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_route',
        input: JSON.stringify({ operationId: 'op_route', next: 'validate' }),
      }),
    );
    // Idempotent by name while running with the same input; a different input is refused.
    const again = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_route',
        input: JSON.stringify({ operationId: 'op_route', next: 'validate' }),
      }),
    );
    expect(again.executionArn).toBe(started.executionArn);
    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn: engine.stateMachineArn,
          name: 'op_route',
          input: '{"operationId":"other","next":"validate"}',
        }),
      ),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    release();
    const done = await finished(started.executionArn!);
    expect(done.status).toBe('SUCCEEDED');
    // Closed executions keep their name, as on AWS.
    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn: engine.stateMachineArn,
          name: 'op_route',
          input: JSON.stringify({ operationId: 'op_route', next: 'validate' }),
        }),
      ),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'Execute', 'Report']);
    expect(calls.every((c) => c.payload.operationId === 'op_route')).toBe(true);
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn: started.executionArn }));
    const entered = history
      .events!.filter((e) => e.type!.endsWith('StateEntered'))
      .map((e) => `${e.type}:${e.stateEnteredEventDetails!.name}`);
    expect(entered).toEqual([
      'ChoiceStateEntered:Route',
      'TaskStateEntered:Validate',
      'ChoiceStateEntered:Route',
      'WaitStateEntered:Backoff',
      'TaskStateEntered:Execute',
      'ChoiceStateEntered:Route',
      'TaskStateEntered:Report',
      'SucceedStateEntered:Done',
    ]);
    expect(history.events![0].type).toBe('ExecutionStarted');
    expect(history.events!.at(-1)!.type).toBe('ExecutionSucceeded');
  });

  it('waits for a task token: success resumes, failure is caught by name, unknown tokens are refused', async () => {
    let token = '';
    script.Validate = (p) => ({ operationId: p.operationId, next: 'await_approval', Payload: { approvalTimeoutSeconds: 30 } });
    script.RequestApproval = (p) => {
      token = p.taskToken;
      return null;
    };
    script.Execute = (p) => ({ operationId: p.operationId, next: 'report' });
    calls.length = 0;
    const ok = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_token_ok',
        input: '{"operationId":"op_token_ok","next":"validate"}',
      }),
    );
    while (!token) await new Promise((r) => setTimeout(r, 10));
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    await sfn.send(
      new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify({ operationId: 'op_token_ok', next: 'execute' }) }),
    );
    expect((await finished(ok.executionArn!)).status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'RequestApproval', 'Execute', 'Report']);
    await expect(sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }))).rejects.toBeInstanceOf(TaskDoesNotExist);

    token = '';
    calls.length = 0;
    const rejected = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_token_no',
        input: '{"operationId":"op_token_no","next":"validate"}',
      }),
    );
    while (!token) await new Promise((r) => setTimeout(r, 10));
    await sfn.send(new SendTaskFailureCommand({ taskToken: token, error: 'ApprovalRejectedError', cause: 'no' }));
    expect((await finished(rejected.executionArn!)).status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'RequestApproval', 'Report']);
  });

  it('times out a wait after TimeoutSecondsPath and takes the States.Timeout catch', async () => {
    script.Validate = (p) => ({ operationId: p.operationId, next: 'await_approval', Payload: { approvalTimeoutSeconds: 1 } });
    script.RequestApproval = () => null;
    script.ExpireApproval = (p) => ({ operationId: p.operationId, next: 'report' });
    calls.length = 0;
    const started = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_timeout',
        input: '{"operationId":"op_timeout","next":"validate"}',
      }),
    );
    expect((await finished(started.executionArn!)).status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'RequestApproval', 'ExpireApproval', 'Report']);
  });

  it('stops an execution on StopExecution', async () => {
    script.Validate = (p) => ({ operationId: p.operationId, next: 'await_approval', Payload: { approvalTimeoutSeconds: 60 } });
    const started = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: engine.stateMachineArn,
        name: 'op_stop',
        input: '{"operationId":"op_stop","next":"validate"}',
      }),
    );
    await sfn.send(new StopExecutionCommand({ executionArn: started.executionArn, cause: 'test' }));
    expect((await finished(started.executionArn!)).status).toBe('ABORTED');
    expect(engine.abortSignalFor('op_stop')).toBeUndefined();
  });
});

describe('the Express variant on the embedded engine', () => {
  it('runs synchronously to its end, and hands what needs a person to the Standard machine', async () => {
    const { readExpressDefinition } = await import('../../statemachines/definition');
    const expressDefinition = substitute(
      readExpressDefinition(),
      Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), arn(n)])),
    );
    const both = new LocalStepFunctions(
      [
        { name: 'std', definition, type: 'STANDARD' },
        { name: 'exp', definition: expressDefinition, type: 'EXPRESS' },
      ],
      Object.fromEntries(
        LIFECYCLE_FUNCTIONS.map((n) => [
          arn(n),
          async (payload: any) => {
            calls.push({ fn: n, payload });
            return (script[n] ?? (() => ({ operationId: payload.operationId, next: 'done' })))(payload);
          },
        ]),
      ),
    );
    const client = new SFNClient({
      endpoint: await both.listen(),
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
      disableHostPrefix: true,
    });
    try {
      script.Execute = (p) => ({ operationId: p.operationId, next: 'report' });
      script.Report = (p) => ({ operationId: p.operationId, next: 'done' });
      calls.length = 0;
      const out = await client.send(
        new StartSyncExecutionCommand({
          stateMachineArn: both.arnOf('exp'),
          name: 'op_fast',
          input: JSON.stringify({ operationId: 'op_fast', next: 'execute' }),
        }),
      );
      expect(out.status).toBe('SUCCEEDED');
      expect(JSON.parse(out.output!)).toEqual({ operationId: 'op_fast', next: 'done' });
      expect(calls.map((c) => c.fn)).toEqual(['Execute', 'Report']);
      // A wait longer than Express allows, or a person, goes to Handoff, which starts the Standard machine.
      script.Handoff = (p) => ({ operationId: p.operationId, next: 'done' });
      calls.length = 0;
      const long = await client.send(
        new StartSyncExecutionCommand({
          stateMachineArn: both.arnOf('exp'),
          name: 'op_slow',
          input: JSON.stringify({ operationId: 'op_slow', next: 'retry', delaySeconds: 120 }),
        }),
      );
      expect(long.status).toBe('SUCCEEDED');
      calls.length = 0;
      const approval = await client.send(
        new StartSyncExecutionCommand({
          stateMachineArn: both.arnOf('exp'),
          name: 'op_person',
          input: JSON.stringify({ operationId: 'op_person', next: 'await_approval' }),
        }),
      );
      expect(approval.status).toBe('SUCCEEDED');
      expect(calls.map((c) => c.fn)).toEqual(['Handoff']);
      await expect(
        client.send(new StartSyncExecutionCommand({ stateMachineArn: both.arnOf('std'), name: 'op_x', input: '{}' })),
      ).rejects.toThrow();
    } finally {
      client.destroy();
      await both.close();
    }
  });

  it('fails a Standard execution past its history quota, as Step Functions does (States.Runtime)', async () => {
    // A quota of 200 events here (25,000 on AWS): a step that keeps asking for another look at once loops until it.
    const looping = new LocalStepFunctions(
      [{ name: 'std', definition, type: 'STANDARD' }],
      Object.fromEntries(
        LIFECYCLE_FUNCTIONS.map((n) => [arn(n), async (p: any) => ({ operationId: p.operationId, next: 'retry', delaySeconds: 0 })]),
      ),
      undefined,
      undefined,
      undefined,
      200,
    );
    const client = new SFNClient({
      endpoint: await looping.listen(),
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    try {
      const started = await client.send(
        new StartExecutionCommand({
          stateMachineArn: looping.arnOf('std'),
          name: 'op_loop',
          input: JSON.stringify({ operationId: 'op_loop', next: 'validate' }),
        }),
      );
      let described = await client.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
      for (let i = 0; i < 400 && described.status === 'RUNNING'; i++) {
        await new Promise((r) => setTimeout(r, 25));
        described = await client.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
      }
      expect(described).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
      expect(described.cause).toMatch(/maximum number of history events \(200\)/);
      const history = await client.send(new GetExecutionHistoryCommand({ executionArn: started.executionArn }));
      // Each loop is about 3 engine events plus 3 for its task; the last is the failure.
      expect(history.events!.length).toBeGreaterThan(50);
      expect(history.events!.at(-1)!.type).toBe('ExecutionFailed');
    } finally {
      client.destroy();
      await looping.close();
    }
  });
});
