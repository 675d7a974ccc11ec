import { CfnOutput, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DEMO_TOOLS_ENTRY } from './bundling';
import { STAGE_NAME, ToolRunner } from './tool-runner';

export interface ToolRunnerStackProps extends StackProps {
  /** Base URL of the upstreams the demo tools call (the sandbox, deployed separately). */
  sandboxUrl?: string;
  /** Approval links' base URL when the execute-api URL is not how approvers reach the API (LocalStack). */
  publicBaseUrl?: string;
  /** LocalStack only: a fixed REST API id (its `_custom_id_` tag), so the API URL is known before deploy. */
  restApiCustomId?: string;
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
    if (props.restApiCustomId) Tags.of(this.runner.api).add('_custom_id_', props.restApiCustomId);

    new CfnOutput(this, 'ApiUrl', { value: this.runner.apiUrl });
    new CfnOutput(this, 'RestApiId', { value: this.runner.api.restApiId });
    new CfnOutput(this, 'StageName', { value: STAGE_NAME });
    new CfnOutput(this, 'StateMachineArn', { value: this.runner.stateMachine.stateMachineArn });
    new CfnOutput(this, 'ConfigSecretArn', { value: this.runner.configSecret.secretArn });
    new CfnOutput(this, 'ApprovalTopicArn', { value: this.runner.approvalTopic.topicArn });
    new CfnOutput(this, 'SweeperFunctionName', { value: this.runner.functions.Sweeper.functionName });
    new CfnOutput(this, 'SweepScheduleName', { value: this.runner.sweepSchedule.scheduleName });
  }
}
