/** `toolrunner/cdk`: the `ToolRunner` construct, for a user's own CDK app. */
export * from '../../infra/tool-runner';
