import { DescribeExecutionCommand, GetExecutionHistoryCommand, SendTaskFailureCommand, SendTaskHeartbeatCommand, SendTaskSuccessCommand, SFNClient, StartExecutionCommand, StopExecutionCommand, TaskDoesNotExist, ExecutionAlreadyExists } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIFECYCLE_FUNCTIONS, placeholderOf, readDefinition, substitute, type LifecycleFunction } from '../../statemachines/definition';
import { LocalStepFunctions } from '../../local/sfn-endpoint';

/** The real ASL on the embedded engine, with scripted functions: checks routing, waits, tokens and errors. */
const calls: { fn: string; payload: any }[] = [];
const script: Partial<Record<LifecycleFunction, (payload: any) => unknown>> = {};
let engine: LocalStepFunctions;
let sfn: SFNClient;
const arn = (n: string) => `arn:aws:lambda:us-east-1:000000000000:function:${n}`;

beforeAll(async () => {
  const definition = substitute(readDefinition(), Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), arn(n)])));
  const functions = Object.fromEntries(
    LIFECYCLE_FUNCTIONS.map((n) => [arn(n), async (payload: any) => {
      calls.push({ fn: n, payload });
      return (script[n] ?? (() => ({ operationId: payload.operationId, next: 'done' })))(payload);
    }]),
  );
  engine = new LocalStepFunctions(definition, functions);
  sfn = new SFNClient({ endpoint: await engine.listen(), region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
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
  it('routes Validate → Backoff → Execute → Report as the steps say, and keeps history', async () => {
    calls.length = 0;
    script.Validate = async (p) => {
      await new Promise((r) => setTimeout(r, 200));
      return { operationId: p.operationId, next: 'retry', delaySeconds: 0 };
    };
    script.Execute = (p) => ({ operationId: p.operationId, next: 'report' });
    script.Report = (p) => ({ operationId: p.operationId, next: 'done' });
    const started = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_route', input: JSON.stringify({ operationId: 'op_route' }) }));
    // Idempotent by name while running with the same input; a different input is refused.
    const again = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_route', input: JSON.stringify({ operationId: 'op_route' }) }));
    expect(again.executionArn).toBe(started.executionArn);
    await expect(sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_route', input: '{"operationId":"other"}' }))).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    const done = await finished(started.executionArn!);
    expect(done.status).toBe('SUCCEEDED');
    // Closed executions keep their name, as on AWS.
    await expect(sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_route', input: JSON.stringify({ operationId: 'op_route' }) }))).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'Execute', 'Report']);
    expect(calls.every((c) => c.payload.operationId === 'op_route')).toBe(true);
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn: started.executionArn }));
    const entered = history.events!.filter((e) => e.type!.endsWith('StateEntered')).map((e) => `${e.type}:${e.stateEnteredEventDetails!.name}`);
    expect(entered).toEqual(['TaskStateEntered:Validate', 'ChoiceStateEntered:Route', 'WaitStateEntered:Backoff', 'TaskStateEntered:Execute', 'ChoiceStateEntered:Route', 'TaskStateEntered:Report', 'SucceedStateEntered:Done']);
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
    const ok = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_token_ok', input: '{"operationId":"op_token_ok"}' }));
    while (!token) await new Promise((r) => setTimeout(r, 10));
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify({ operationId: 'op_token_ok', next: 'execute' }) }));
    expect((await finished(ok.executionArn!)).status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'RequestApproval', 'Execute', 'Report']);
    await expect(sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }))).rejects.toBeInstanceOf(TaskDoesNotExist);

    token = '';
    calls.length = 0;
    const rejected = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_token_no', input: '{"operationId":"op_token_no"}' }));
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
    const started = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_timeout', input: '{"operationId":"op_timeout"}' }));
    expect((await finished(started.executionArn!)).status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.fn)).toEqual(['Validate', 'RequestApproval', 'ExpireApproval', 'Report']);
  });

  it('stops an execution on StopExecution', async () => {
    script.Validate = (p) => ({ operationId: p.operationId, next: 'await_approval', Payload: { approvalTimeoutSeconds: 60 } });
    const started = await sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name: 'op_stop', input: '{"operationId":"op_stop"}' }));
    await sfn.send(new StopExecutionCommand({ executionArn: started.executionArn, cause: 'test' }));
    expect((await finished(started.executionArn!)).status).toBe('ABORTED');
    expect(engine.abortSignalFor('op_stop')).toBeUndefined();
  });
});
