import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { ToolRunner } from '../../infra/tool-runner';

/** Properties that name a resource account-wide (a retained one of these blocks the next deploy of the same name). */
const PHYSICAL_NAME =
  /^(LogGroupName|TableName|BucketName|Name|StateMachineName|FunctionName|TopicName|RoleName|DashboardName|AlarmName|Domain)$/;

describe('cdk destroy, then cdk deploy under the same stack name', () => {
  it('finds no retained resource with a fixed name left behind', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Redeploy');
    new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, oauth: { cognito: true } });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<
      string,
      { Type: string; DeletionPolicy?: string; Properties?: Record<string, unknown> }
    >;
    const retainedWithNames = Object.entries(resources)
      .filter(([, r]) => r.DeletionPolicy === 'Retain' || r.DeletionPolicy === 'RetainExceptOnCreate')
      .filter(([, r]) => Object.entries(r.Properties ?? {}).some(([k, v]) => PHYSICAL_NAME.test(k) && typeof v === 'string'))
      .map(([id, r]) => `${r.Type} ${id}`);
    expect(retainedWithNames).toEqual([]);
    // The tables, the secret, the bucket and the function logs are still retained, under generated names.
    expect(
      Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::Table' && r.DeletionPolicy === 'RetainExceptOnCreate'),
    ).toHaveLength(6);
  });
});
