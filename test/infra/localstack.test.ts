import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { SFNClient, StartSyncExecutionCommand } from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import { sfnClientConfig } from '../../functions/handlers/runtime';
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

  it('names LOCALSTACK_AUTH_TOKEN, without which LocalStack does not start', () => {
    expect(commands).toMatch(/LOCALSTACK_AUTH_TOKEN/);
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
    // Every function of the runner; Tools gets the tools' environment alone.
    // (The signing key's seed runs once at deploy, with no environment.)
    for (const [id, fn] of Object.entries(template.findResources('AWS::Lambda::Function')))
      if (!id.includes('SigningKeySeed'))
        expect(fn.Properties.Environment.Variables.PUBLIC_BASE_URL).toBe(id.includes('ToolsFunction') ? undefined : url);
    expect(Object.keys(template.toJSON().Outputs)).toEqual(expect.arrayContaining(['ApiId', 'SweeperFunctionName', 'ConfigSecretArn']));
    // A whole synthesis: minutes on a busy machine, like the other synthesizing tests' hooks.
  }, 180_000);
});

describe("the Step Functions client under LocalStack's endpoint variables", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const key of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_SFN', 'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS']) delete process.env[key];
    Object.assign(process.env, saved);
  });

  /** The host the real SDK client would send StartSyncExecution to, with these options, caught before any network. */
  async function syncHost(config: ConstructorParameters<typeof SFNClient>[0]): Promise<string> {
    const client = new SFNClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, ...config });
    let host = '';
    client.middlewareStack.add(
      () => async (args) => {
        host = (args.request as { hostname: string }).hostname;
        throw new Error('request caught before sending');
      },
      { step: 'build', priority: 'low' },
    );
    await expect(
      client.send(new StartSyncExecutionCommand({ stateMachineArn: 'arn:aws:states:us-east-1:000000000000:stateMachine:x', input: '{}' })),
    ).rejects.toThrow(/caught/);
    return host;
  }

  it('drops the sync- host prefix when only AWS_ENDPOINT_URL is set, as LocalStack sets it inside Lambdas', async () => {
    for (const key of ['AWS_ENDPOINT_URL_SFN', 'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS']) delete process.env[key];
    process.env.AWS_ENDPOINT_URL = 'http://localhost.localstack.cloud:4566';
    expect(sfnClientConfig()).toEqual({ disableHostPrefix: true });
    expect(await syncHost(sfnClientConfig())).toBe('localhost.localstack.cloud');
    // The fault it fixes: with the prefix kept, the call goes to a host that does not exist.
    expect(await syncHost({ disableHostPrefix: false })).toBe('sync-localhost.localstack.cloud');
  });

  it('drops it for AWS_ENDPOINT_URL_SFN (the embedded engine) and keeps it on AWS', async () => {
    delete process.env.AWS_ENDPOINT_URL;
    process.env.AWS_ENDPOINT_URL_SFN = 'http://127.0.0.1:4599';
    expect(await syncHost(sfnClientConfig())).toBe('127.0.0.1');
    delete process.env.AWS_ENDPOINT_URL_SFN;
    expect(sfnClientConfig()).toEqual({ disableHostPrefix: false });
    expect(await syncHost(sfnClientConfig())).toBe('sync-states.us-east-1.amazonaws.com');
    expect(sfnClientConfig({ AWS_ENDPOINT_URL: 'http://x:1', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' })).toEqual({
      disableHostPrefix: false,
    });
  });
});
