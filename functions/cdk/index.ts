/** `toolrunner/cdk`: the `ToolRunner` construct, for a user's own CDK app. */
export * from '../../infra/tool-runner';
export { AlarmTier, type RunnerAlarm } from '../../infra/monitoring';
export { RunnerOAuth, type ToolRunnerOAuth, type ToolRunnerRole } from '../../infra/oauth';
export type { OAuthConfig } from '../core/config';
export type { FunctionName } from '../../infra/functions';
export type { LifecycleFunction } from '../../statemachines/definition';
export type { TableLayout } from '../adapters/tables';
