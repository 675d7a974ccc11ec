import { App } from 'aws-cdk-lib';
import { applyNag } from './nag';
import { ToolRunnerStack } from './tool-runner-stack';

const app = new App();
new ToolRunnerStack(app, app.node.tryGetContext('stackName') ?? 'ToolRunner', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  sandboxUrl: app.node.tryGetContext('sandboxUrl'),
  publicBaseUrl: app.node.tryGetContext('publicBaseUrl'),
  apiCustomId: app.node.tryGetContext('apiCustomId'),
});
applyNag(app);
