import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLES } from '../../functions/adapters/tables';
import { API_ROUTES } from '../../infra/functions';
import { RECOVERABLE_TABLES } from '../../infra/tool-runner';
import { ToolRunnerStack } from '../../infra/tool-runner-stack';
import { LIFECYCLE_FUNCTIONS, placeholderOf, placeholdersIn, readDefinition } from '../../statemachines/definition';

let template: Template;
let deployedDefinition: string;
beforeAll(() => {
  // Skip esbuild bundling here; `npx cdk synth` bundles for real.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new ToolRunnerStack(app, 'Test', { env: { account: '123456789012', region: 'eu-west-1' } });
  template = Template.fromStack(stack);
  const assembly = app.synth();
  const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
  const key = machine.Properties.DefinitionS3Location.Key as string;
  // The definition is a file asset, staged as asset.<hash>.json beside the template.
  deployedDefinition = readFileSync(join(assembly.directory, `asset.${key}`), 'utf8');
});

const LOG_DELIVERY = new Set([
  'logs:CreateLogDelivery',
  'logs:GetLogDelivery',
  'logs:UpdateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:DescribeResourcePolicies',
  'logs:DescribeLogGroups',
]);
/** Answering a Step Functions task token: these actions have no resource types in IAM. */
const TASK_RESPONSE = new Set(['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat']);

function resources(type: string): Record<string, any> {
  return template.findResources(type);
}

describe('CDK stack', () => {
  it('deploys the ASL file unchanged, with a substitution for every placeholder', () => {
    const [machine] = Object.values(resources('AWS::StepFunctions::StateMachine')).filter(
      (m) => m.Properties.StateMachineType === 'STANDARD',
    );
    const text = readDefinition();
    expect(deployedDefinition).toBe(text);
    const substitutions = machine.Properties.DefinitionSubstitutions as Record<string, any>;
    expect(Object.keys(substitutions).sort()).toEqual(placeholdersIn(text).sort());
    expect(LIFECYCLE_FUNCTIONS.map(placeholderOf)).toEqual(expect.arrayContaining(Object.keys(substitutions)));
    const functionIds = Object.keys(resources('AWS::Lambda::Function'));
    for (const value of Object.values(substitutions)) {
      expect(value['Fn::GetAtt'][1]).toBe('Arn');
      expect(functionIds).toContain(value['Fn::GetAtt'][0]);
    }
    expect(machine.Properties.StateMachineType).toBe('STANDARD');
    expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: false });
    expect(machine.Properties.LoggingConfiguration).toMatchObject({ Level: 'ALL', IncludeExecutionData: false });
    // The Express machine runs every call that needs no person: at ALL its logs cost more than the rest of a call's.
    const [express] = Object.values(resources('AWS::StepFunctions::StateMachine')).filter(
      (m) => m.Properties.StateMachineType === 'EXPRESS',
    );
    expect(express.Properties.LoggingConfiguration).toMatchObject({ Level: 'ERROR', IncludeExecutionData: false });
  });

  it('runs every Lambda on Node.js 24 by default, arm64, X-Ray tracing only where the caller samples (xrayTracing off)', () => {
    const fns = Object.values(resources('AWS::Lambda::Function'));
    // The lifecycle steps, the API, the sweeper, Tools (toolIsolation "function", the default) and the signing key's seed.
    expect(fns.length).toBe(LIFECYCLE_FUNCTIONS.length + 4);
    for (const fn of fns) {
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.TracingConfig).toEqual({ Mode: 'PassThrough' });
    }
  });

  it('creates the tables of functions/adapters/tables.ts: on demand, point-in-time recovery, TTL where records expire', () => {
    const tables = Object.values(resources('AWS::DynamoDB::Table'));
    expect(tables).toHaveLength(TABLES.length);
    for (const layout of TABLES) {
      const table = tables.find(
        (t) =>
          t.Properties.KeySchema[0].AttributeName === layout.partitionKey.name &&
          (t.Properties.KeySchema[1]?.AttributeName ?? undefined) === layout.sortKey?.name,
      );
      expect(table, layout.id).toBeDefined();
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: RECOVERABLE_TABLES.includes(layout.id),
      });
      if (layout.ttlAttribute)
        expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: layout.ttlAttribute, Enabled: true });
      expect((table.Properties.GlobalSecondaryIndexes ?? []).map((i: { IndexName: string }) => i.IndexName).sort()).toEqual(
        (layout.indexes ?? []).map((i) => i.name).sort(),
      );
      expect(table.DeletionPolicy).toBe('RetainExceptOnCreate');
    }
  });

  it('puts an HTTP API in front of the API Lambda (payload format 2.0) and schedules the sweeper', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.resourceCountIs('AWS::ApiGateway::RestApi', 0);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const [integrationId, integration] = Object.entries(resources('AWS::ApiGatewayV2::Integration'))[0];
    expect(integration.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    expect(JSON.stringify(integration.Properties.IntegrationUri)).toMatch(/RunnerApiFunction/);
    const routes = Object.values(resources('AWS::ApiGatewayV2::Route'));
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual([...API_ROUTES].sort());
    for (const route of routes) expect(route.Properties.Target).toEqual({ 'Fn::Join': ['', ['integrations/', { Ref: integrationId }]] });
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      Target: { Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('SweeperFunction'), 'Arn'] } },
    });
    // Approval links (for the construct's approvers only) and link-free notices.
    template.resourceCountIs('AWS::SNS::Topic', 3); // links, notices, alarms
  });

  it('serves the $default stage, deployed on every change and throttled', () => {
    const [stage] = Object.values(resources('AWS::ApiGatewayV2::Stage'));
    expect(stage.Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
    });
  });

  it('creates the blob store: encrypted, TLS only, private, objects expiring; every function gets its name and object get/put only', () => {
    const [[bucketId, bucket]] = Object.entries(resources('AWS::S3::Bucket'));
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toBe(
      'AES256',
    );
    expect(bucket.Properties.PublicAccessBlockConfiguration).toMatchObject({ BlockPublicAcls: true, RestrictPublicBuckets: true });
    expect(bucket.Properties.LifecycleConfiguration.Rules).toContainEqual(
      expect.objectContaining({ ExpirationInDays: 31, Status: 'Enabled' }),
    );
    const policy = Object.values(resources('AWS::S3::BucketPolicy'))[0];
    expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    for (const fn of Object.values(resources('AWS::Lambda::Function')).filter(
      (f) => f.Properties.Environment?.Variables?.TABLE_OPERATIONS,
    )) {
      expect(fn.Properties.Environment.Variables.BLOB_BUCKET).toEqual({ Ref: bucketId });
    }
    const s3Statements = Object.values(resources('AWS::IAM::Policy')).flatMap((p) =>
      p.Properties.PolicyDocument.Statement.filter((st: { Action: string | string[] }) =>
        [st.Action].flat().some((a) => a.startsWith('s3:')),
      ),
    );
    expect(s3Statements.length).toBeGreaterThan(0);
    for (const statement of s3Statements) {
      expect([statement.Action].flat().sort()).toEqual(['s3:GetObject', 's3:PutObject']);
      expect(JSON.stringify(statement.Resource)).toContain(`"${bucketId}","Arn"`);
      expect(JSON.stringify(statement.Resource)).toContain('/*');
    }
  });

  it('grants each function only the tables it writes', () => {
    const tableIds = Object.fromEntries(
      Object.entries(resources('AWS::DynamoDB::Table')).map(([id, t]) => [id, t.Properties.KeySchema[0].AttributeName as string]),
    );
    const granted = (fnName: string) => {
      const [fn] = Object.entries(resources('AWS::Lambda::Function'))
        .filter(([id]) => id.startsWith(`Runner${fnName}Function`))
        .map(([, f]) => f);
      const roleId = fn.Properties.Role['Fn::GetAtt'][0] as string;
      const policy = Object.values(resources('AWS::IAM::Policy')).find((p) =>
        p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId),
      )!;
      const refs = JSON.stringify(policy.Properties.PolicyDocument.Statement);
      return Object.entries(tableIds)
        .filter(([id]) => refs.includes(`"${id}"`))
        .map(([, key]) => key)
        .sort();
    };
    expect(granted('Api')).toEqual(['id', 'operationId', 'runId', 'runId', 'shard'].sort());
    expect(granted('Execute')).toEqual(['lockKey', 'operationId', 'runId', 'runId', 'shard'].sort());
    expect(granted('Report')).toEqual(['lockKey', 'operationId', 'runId', 'runId', 'shard'].sort());
    expect(granted('Handoff')).toEqual(['operationId', 'runId', 'runId', 'shard'].sort());
  });

  it('uses no wildcard actions, and wildcard resources only where AWS requires them', () => {
    for (const [id, policy] of Object.entries(resources('AWS::IAM::Policy'))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        const actions = [statement.Action].flat() as string[];
        for (const action of actions) expect(action, id).not.toMatch(/(^\*$|:\*$)/);
        if ([statement.Resource].flat().includes('*')) {
          // These have no resource-level permissions: X-Ray segment upload, CloudWatch Logs vended delivery, and
          // answering a task token (the token names no resource; a grant on the state machine allows nothing).
          expect(
            actions.every((a) => a.startsWith('xray:') || LOG_DELIVERY.has(a) || TASK_RESPONSE.has(a)),
            `${id}: ${actions}`,
          ).toBe(true);
        }
      }
    }
  });
});
