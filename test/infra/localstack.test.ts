import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ToolRunnerStack } from '../../infra/tool-runner-stack';

// LocalStack cannot run here (no Docker): these check what scripts/localstack.sh relies on, not a deploy.
const script = readFileSync('scripts/localstack.sh', 'utf8');
const commands = script
  .split('\n')
  .filter((l) => !l.trim().startsWith('#'))
  .join('\n');

describe('scripts/localstack.sh', () => {
  it('is valid bash', () => {
    execFileSync('bash', ['-n', 'scripts/localstack.sh']);
  });

  it('deploys with cdklocal, S3 on its own path-style endpoint, never plain cdk', () => {
    expect(commands).toMatch(/npx cdklocal deploy/);
    expect(commands).not.toMatch(/npx cdk (deploy|bootstrap)/);
    expect(commands).toMatch(/AWS_ENDPOINT_URL_S3=/);
    expect(commands).toMatch(/AWS_S3_FORCE_PATH_STYLE=1/);
  });

  it("points the tests at LocalStack's API URL, not amazonaws.com, and invokes the sweeper the Scheduler never fires", () => {
    // An HTTP API's $default stage: no stage in the path.
    expect(commands).toMatch(/api_url="http:\/\/\$api_id\.execute-api\.localhost\.localstack\.cloud:4566"/);
    expect(commands).not.toMatch(/output ApiUrl/);
    expect(commands).toMatch(/aws lambda invoke --function-name "\$sweeper"/);
    expect(script).toMatch(/LAMBDA_IGNORE_ARCHITECTURE=1/);
  });

  it('gets from the demo stack a fixed API id and approval links on the LocalStack URL', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const url = 'http://toolrunner.execute-api.localhost.localstack.cloud:4566';
    const stack = new ToolRunnerStack(app, 'Local', {
      env: { account: '000000000000', region: 'us-east-1' },
      apiCustomId: 'toolrunner',
      publicBaseUrl: url,
    });
    const template = Template.fromStack(stack);
    const [api] = Object.values(template.findResources('AWS::ApiGatewayV2::Api'));
    expect(api.Properties.Tags).toEqual({ _custom_id_: 'toolrunner' });
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function')))
      expect(fn.Properties.Environment.Variables.PUBLIC_BASE_URL).toBe(url);
    expect(Object.keys(template.toJSON().Outputs)).toEqual(expect.arrayContaining(['ApiId', 'SweeperFunctionName', 'ConfigSecretArn']));
  });
});
