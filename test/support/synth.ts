import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ToolRunnerStack } from '../../infra/tool-runner-stack';

/** The demo app as `cdk synth` builds it, without esbuild (bundles are tested in test/infra/bundles.test.ts). */
export function synthDemo(): { app: App; stack: ToolRunnerStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new ToolRunnerStack(app, 'Test', {
    env: { account: '123456789012', region: 'eu-west-1' },
    sandboxUrl: 'https://sandbox.example.com',
  });
  return { app, stack, template: Template.fromStack(stack) };
}
