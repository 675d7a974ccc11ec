import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

/** 100 KB of arguments: over the 64 KiB a record keeps inline, so the API function writes them to the blob store. */
const largeArguments = { orderId: 'ord_1', note: 'x'.repeat(100_000) };

// Template mode only: the bucket, its name and the functions' S3 permissions come from the synthesized template.
describe.runIf(handlerMode === 'template')('the blob store from the template', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.stop());

  it('large arguments go to the template bucket (s3rver) through the IAM check, and the record reads them back', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_large_args', name: 'get_order', arguments: largeArguments });
    expect(reply.status).toBe(200);
    // get_order takes only orderId: the call is refused, after its arguments were recorded (once, in the bucket).
    expect(reply.body).toMatchObject({ status: 'rejected', code: 'invalid_arguments' });
    const op = await api.operation(keys.reviewer, reply.body.logical_operation_id);
    expect(op.state).toBe('reported');
    expect(stack.denials).toEqual([]);
  });
});

describe.runIf(handlerMode === 'template')('the blob store from the template: the API function without s3:PutObject', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      editTemplate: (template) => {
        for (const resource of Object.values(template.Resources) as { Type: string; Properties: Record<string, any> }[]) {
          if (resource.Type !== 'AWS::IAM::Policy') continue;
          for (const statement of resource.Properties.PolicyDocument.Statement) {
            const actions = [statement.Action].flat();
            if (actions.includes('s3:PutObject')) statement.Action = actions.filter((a: string) => a !== 's3:PutObject');
          }
        }
      },
    });
  });
  afterAll(async () => stack?.stop());

  it('is denied as on AWS: the API answers a clean 500 and records nothing', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_denied', name: 'get_order', arguments: largeArguments });
    expect(reply.status).toBe(500);
    expect(JSON.stringify(reply.body)).not.toMatch(/\n\s+at\s/);
    expect(stack.denials!.map((d) => d.action)).toContain('s3:PutObject');
    // A small call still works: nothing needs the bucket.
    const small = await api.call(keys.agent, runId, { callId: 'call_small', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect(small.body).toMatchObject({ status: 'succeeded' });
  });
});
