import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CfnTemplate } from '../../local/template/assembly';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

type Resource = { Type: string; Properties: Record<string, any> };

const INTEGRATION_TIMEOUT_MS = 3_000;

/**
 * The synthesized template, plus a small state machine that doubles its input (to cross the 256 KB state
 * payload quota) and a shorter integration timeout on the API (to see the gateway give up).
 */
function withProbes(template: CfnTemplate): void {
  const resources = template.Resources as Record<string, Resource>;
  const standard = Object.values(resources).find(
    (r) => r.Type === 'AWS::StepFunctions::StateMachine' && r.Properties.StateMachineType === 'STANDARD',
  )!;
  resources.PayloadProbe = {
    Type: 'AWS::StepFunctions::StateMachine',
    Properties: {
      StateMachineName: 'payload-probe',
      StateMachineType: 'STANDARD',
      RoleArn: standard.Properties.RoleArn,
      DefinitionString: JSON.stringify({
        Comment: 'doubles its input in ${Region}',
        StartAt: 'Grow',
        States: { Grow: { Type: 'Pass', Parameters: { 'a.$': '$.pad', 'b.$': '$.pad' }, Next: 'Done' }, Done: { Type: 'Succeed' } },
      }),
      DefinitionSubstitutions: { Region: { Ref: 'AWS::Region' } },
    },
  };
  for (const resource of Object.values(resources))
    if (resource.Type === 'AWS::ApiGatewayV2::Integration') resource.Properties.TimeoutInMillis = INTEGRATION_TIMEOUT_MS;
}

describe.runIf(handlerMode === 'template')('AWS limits where AWS applies them', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ editTemplate: withProbes });
  });
  afterAll(async () => stack?.stop());

  const execute = async (padBytes: number) => {
    const sfn = new SFNClient({});
    const stateMachineArn = stack.stateMachineArn!.replace(/:stateMachine:.*$/, ':stateMachine:payload-probe');
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({ stateMachineArn, input: JSON.stringify({ pad: 'x'.repeat(padBytes) }) }),
    );
    return stack.api.until(
      'the execution to end',
      () => sfn.send(new DescribeExecutionCommand({ executionArn })),
      (e) => e.status !== 'RUNNING',
    );
  };

  it('a state whose output is over 256 KB fails the execution with States.DataLimitExceeded', async () => {
    const failed = await execute(150 * 1024);
    expect(failed).toMatchObject({
      status: 'FAILED',
      error: 'States.DataLimitExceeded',
      cause: expect.stringContaining("The state/task 'Grow' returned a result with a size exceeding the maximum number of bytes"),
    });
    // Below the quota the same machine succeeds: the limit, not the machine, failed it.
    expect(await execute(100 * 1024)).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('answers as the HTTP API does: an unrouted path 404, a body over 10 MB 413, an integration past its timeout 503', async () => {
    const { api, keys } = stack;
    // The first call of a fresh environment can take seconds here: wait for the API to answer within the timeout.
    await api.until(
      'the API to answer',
      () => api.request('GET', '/v1/health'),
      (r) => r.status === 200,
      60_000,
    );
    expect(await api.request('GET', '/v2/runs')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
    expect(await api.request('GET', '/')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
    // The routes the template declares reach the API function, which answers for itself.
    expect((await api.request('GET', '/v1/health')).body).toEqual({ status: 'ok' });
    for (const path of ['/mcp', '/console', '/console/runs', '/v1/nothing-here'])
      expect((await api.request('GET', path)).body, path).not.toEqual({ message: 'Not Found' });

    const huge = await api.request('POST', '/v1/runs', { key: keys.agent, raw: JSON.stringify({ pad: 'x'.repeat(10 * 1024 * 1024 + 1) }) });
    expect(huge).toMatchObject({ status: 413, body: { message: 'Request Entity Too Large' } });

    // A long-poll for a call whose upstream hangs (up to the read's 5 s timeout) outlasts the integration timeout.
    const run = await api.until(
      'a run',
      () => api.request('POST', '/v1/runs', { key: keys.agent, body: {} }),
      (r) => r.status === 201,
      60_000,
    );
    await stack.sandbox.fault({ route: 'GET /v1/orders/{id}', mode: 'hang', delayMs: 30_000, count: 3 });
    const started = Date.now();
    const waited = await api.call(
      keys.agent,
      run.body.runId,
      { callId: 'call_wait', name: 'get_order', arguments: { orderId: 'ord_1' } },
      20,
    );
    expect(waited).toMatchObject({ status: 503, body: { message: 'Service Unavailable' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(INTEGRATION_TIMEOUT_MS);
  }, 120_000);

  it('DynamoDB Local refuses an item over 400 KB, as DynamoDB does', async () => {
    const dynamo = new DynamoDBClient({});
    const runs = stack.tables!.runs;
    await expect(
      dynamo.send(new PutItemCommand({ TableName: runs, Item: { runId: { S: 'run_big' }, pad: { S: 'x'.repeat(401 * 1024) } } })),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringContaining('Item size has exceeded the maximum allowed size'),
    });
    await dynamo.send(new PutItemCommand({ TableName: runs, Item: { runId: { S: 'run_fits' }, pad: { S: 'x'.repeat(300 * 1024) } } }));
  });
});
