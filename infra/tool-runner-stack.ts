import { CfnOutput, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DEMO_TOOLS_ENTRY } from './bundling';
import { ToolRunner } from './tool-runner';

export interface ToolRunnerStackProps extends StackProps {
  /** Base URL of the upstreams the demo tools call (the sandbox, deployed separately). */
  sandboxUrl?: string;
  /** Approval links' base URL when the execute-api URL is not how approvers reach the API (LocalStack). */
  publicBaseUrl?: string;
  /** LocalStack only: a fixed HTTP API id (its `_custom_id_` tag), so the API URL is known before deploy. */
  apiCustomId?: string;
}

/** The repo's demo: the `ToolRunner` construct with the demo tools, calling the sandbox at `sandboxUrl`. */
export class ToolRunnerStack extends Stack {
  readonly runner: ToolRunner;

  constructor(scope: Construct, id: string, props: ToolRunnerStackProps = {}) {
    super(scope, id, props);
    this.runner = new ToolRunner(this, 'Runner', {
      tools: { entry: DEMO_TOOLS_ENTRY(), environment: { SANDBOX_URL: props.sandboxUrl ?? 'https://sandbox.invalid' } },
      publicBaseUrl: props.publicBaseUrl,
    });
    if (props.apiCustomId) Tags.of(this.runner.api).add('_custom_id_', props.apiCustomId);

    new CfnOutput(this, 'ApiUrl', { value: this.runner.apiUrl });
    new CfnOutput(this, 'ApiId', { value: this.runner.api.apiId });
    new CfnOutput(this, 'StateMachineArn', { value: this.runner.stateMachine.stateMachineArn });
    new CfnOutput(this, 'ConfigSecretArn', { value: this.runner.configSecret.secretArn });
    new CfnOutput(this, 'ApprovalTopicArn', { value: this.runner.approvalTopic.topicArn });
    new CfnOutput(this, 'NoticesTopicArn', { value: this.runner.noticesTopic.topicArn });
    new CfnOutput(this, 'SweeperFunctionName', { value: this.runner.functions.Sweeper.functionName });
    new CfnOutput(this, 'SweepScheduleName', { value: this.runner.sweepSchedule.scheduleName });
  }
}
