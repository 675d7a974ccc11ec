import { DescribeExecutionCommand, SendTaskSuccessCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalStepFunctions } from '../../local/sfn-endpoint';

const FN = 'arn:aws:lambda:us-east-1:000000000000:function:wait';

/** A Standard machine that waits for a task token, then says which version it is. */
const definition = (version: string) =>
  JSON.stringify({
    StartAt: 'Wait',
    States: {
      Wait: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
        Parameters: { FunctionName: FN, Payload: { 'taskToken.$': '$$.Task.Token' } },
        Next: 'Say',
      },
      Say: { Type: 'Pass', Result: { version }, End: true },
    },
  });

describe('an update of a state machine (template mode)', () => {
  const tokens: string[] = [];
  const engine = new LocalStepFunctions([{ name: 'm', definition: definition('v1'), type: 'STANDARD' }], {
    [FN]: async (payload: unknown) => {
      tokens.push((payload as { taskToken: string }).taskToken);
      return null;
    },
  });
  afterAll(() => engine.close());

  it('runs new executions on the new definition; a running one finishes on the one it started with', async () => {
    const sfn = new SFNClient({
      endpoint: await engine.listen(),
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    const until = async (ok: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error('timed out');
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const start = (name: string) => sfn.send(new StartExecutionCommand({ stateMachineArn: engine.stateMachineArn, name, input: '{}' }));
    const before = await start('before');
    await until(() => tokens.length === 1);
    engine.define({ name: 'm', definition: definition('v2'), type: 'STANDARD' });
    const after = await start('after');
    await until(() => tokens.length === 2);
    for (const taskToken of tokens) await sfn.send(new SendTaskSuccessCommand({ taskToken, output: '{}' }));
    const output = async (executionArn: string) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
        if (d.status !== 'RUNNING') return { status: d.status, output: JSON.parse(d.output ?? 'null') };
        if (Date.now() > deadline) throw new Error(`${executionArn} still running`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    expect(await output(before.executionArn!)).toEqual({ status: 'SUCCEEDED', output: { version: 'v1' } });
    expect(await output(after.executionArn!)).toEqual({ status: 'SUCCEEDED', output: { version: 'v2' } });
  });
});
