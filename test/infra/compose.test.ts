import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { API_ROUTES } from '../../infra/functions';
import { nagPacks } from '../../infra/nag';
import type { RunnerAlarm } from '../../infra/monitoring';
import { ToolRunner } from '../../infra/tool-runner';

/** CloudFormation's longest stack name. */
const LONG_STACK_NAME = `Runner${'x'.repeat(122)}`;

/**
 * Physical names AWS keeps per account and region, by resource type and property, with AWS's limit.
 * A named resource of a type missing here fails the test: add its limit.
 */
const NAME_LIMITS: Record<string, Record<string, number>> = {
  'AWS::StepFunctions::StateMachine': { StateMachineName: 80 },
  'AWS::Logs::LogGroup': { LogGroupName: 512 },
  'AWS::ApiGatewayV2::Api': { Name: 128 },
  'AWS::CloudWatch::Dashboard': { DashboardName: 255 },
  'AWS::CloudWatch::Alarm': { AlarmName: 255 },
  'AWS::CloudWatch::CompositeAlarm': { AlarmName: 255 },
  'AWS::Lambda::Function': { FunctionName: 64 },
  'AWS::DynamoDB::Table': { TableName: 255 },
  'AWS::IAM::Role': { RoleName: 64 },
  'AWS::SNS::Topic': { TopicName: 256 },
  'AWS::Scheduler::Schedule': { Name: 64 },
  'AWS::SecretsManager::Secret': { Name: 512 },
  'AWS::Logs::MetricFilter': { FilterName: 512 },
};
/**
 * Top-level properties ending in `Name` that are no account-wide name: an alarm's metric, a topic's label,
 * a stage of its own API, an inline policy of its own role.
 */
const NOT_PHYSICAL = new Set(['MetricName', 'DisplayName', 'StageName', 'PolicyName']);

/**
 * The app a user might write: two runners in one stack, one of them under another construct with the same
 * id, and one in a stack whose name has CloudFormation's 128 characters; the app's cdk-nag packs applied.
 */
function composedApp() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const env = { account: '123456789012', region: 'eu-west-1' };
  const tools = { entry: DEMO_TOOLS_ENTRY() };
  const shared = new Stack(app, 'Shared', { env });
  const topic = new sns.Topic(shared, 'Alarms', { enforceSSL: true });
  const runners = [
    new ToolRunner(shared, 'Runner', { tools, alarmTopic: topic }),
    new ToolRunner(new Construct(shared, 'Team'), 'Runner', { tools }),
  ];
  const long = new Stack(app, 'Long', { env, stackName: LONG_STACK_NAME });
  runners.push(new ToolRunner(long, 'Runner', { tools }));
  return { app, stacks: [shared, long], runners, topic };
}

const pause = () => new Promise((resolve) => setImmediate(resolve));

type Resources = Record<string, { Type: string; Properties?: Record<string, any> }>;

describe('the construct composes: two runners in one stack, one in a stack named with 128 characters', () => {
  let built: ReturnType<typeof composedApp>;
  let templates: { stack: Stack; resources: Resources }[];
  beforeAll(async () => {
    built = composedApp();
    // One synthesis for both stacks; the pauses let the test worker answer its runner on a busy machine.
    await pause();
    const assembly = built.app.synth();
    await pause();
    templates = built.stacks.map((stack) => ({
      stack,
      resources: Template.fromJSON(assembly.getStackArtifact(stack.artifactId).template).toJSON().Resources as Resources,
    }));
  }, 180_000);
  /** Every resource of the app, by `<stack>/<logical id>` (logical ids repeat across stacks). */
  const all = () =>
    templates.flatMap(({ stack, resources }) => Object.entries(resources).map(([id, r]) => [`${stack.node.id}/${id}`, r] as const));
  const ofType = (type: string) => all().filter(([, r]) => r.Type === type);
  const inStackOf = (id: string) => templates.find((t) => t.stack.node.id === id.split('/')[0])!.resources;

  it('synthesizes with no unacknowledged cdk-nag finding', async () => {
    expect(LONG_STACK_NAME).toHaveLength(128);
    const findings: string[] = [];
    for (const stack of built.stacks) {
      for (const pack of nagPacks(built.app)) {
        const { violations } = pack.validateScope(stack);
        findings.push(
          ...violations.map(
            (v) => `${v.ruleName}: ${v.violatingResources.map((r) => `${r.templatePath} ${r.resourceLogicalId}`).join(', ')}`,
          ),
        );
        await pause();
      }
    }
    expect(findings).toEqual([]);
  });

  it('gives every named resource a name unique across instances and within its AWS limit', () => {
    const names = new Map<string, string>();
    for (const [id, resource] of all()) {
      for (const [key, value] of Object.entries(resource.Properties ?? {})) {
        if (!/Name$/.test(key) || NOT_PHYSICAL.has(key) || typeof value !== 'string') continue;
        const limit = NAME_LIMITS[resource.Type]?.[key];
        expect(limit, `${resource.Type}.${key} is named (${value}): add its AWS limit to NAME_LIMITS`).toBeDefined();
        expect(value.length, `${id}: ${value}`).toBeLessThanOrEqual(limit!);
        const seen = names.get(`${resource.Type}/${value}`);
        expect(seen, `${id} and ${seen} are both ${resource.Type} ${value}`).toBeUndefined();
        names.set(`${resource.Type}/${value}`, id);
      }
    }
    const machines = ofType('AWS::StepFunctions::StateMachine').map(([, r]) => r.Properties!.StateMachineName as string);
    expect(machines).toHaveLength(6);
    for (const name of machines) expect(name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(new Set(machines).size).toBe(6);
  });

  it('logs each state machine to its own group under /aws/vendedlogs/states/', () => {
    for (const [id, machine] of ofType('AWS::StepFunctions::StateMachine')) {
      const [destination] = machine.Properties!.LoggingConfiguration.Destinations;
      const groupId = destination.CloudWatchLogsLogGroup.LogGroupArn['Fn::GetAtt'][0] as string;
      expect(inStackOf(id)[groupId].Properties!.LogGroupName, id).toBe(`/aws/vendedlogs/states/${machine.Properties!.StateMachineName}`);
    }
  });

  it('creates no account-wide singleton: no API Gateway account or CloudWatch role, no shared scheduler role', () => {
    expect(ofType('AWS::ApiGateway::Account')).toEqual([]);
    expect(ofType('AWS::ApiGateway::RestApi')).toEqual([]);
    expect(all().filter(([id]) => id.split('/')[1].startsWith('SchedulerRoleForTarget'))).toEqual([]);
  });

  it('routes /v1, /mcp and /console to each instance’s API Lambda', () => {
    const apis = ofType('AWS::ApiGatewayV2::Api');
    expect(apis).toHaveLength(3);
    for (const [apiId] of apis) {
      const routes = Object.values(inStackOf(apiId)).filter(
        (r) => r.Type === 'AWS::ApiGatewayV2::Route' && r.Properties!.ApiId.Ref === apiId.split('/')[1],
      );
      expect(routes.map((r) => r.Properties!.RouteKey).sort(), apiId).toEqual([...API_ROUTES].sort());
      expect(API_ROUTES).toEqual(expect.arrayContaining(['ANY /mcp', 'ANY /console', 'ANY /console/{proxy+}', 'ANY /v1/{proxy+}']));
    }
  });

  it('gives each instance at least 8 alarms and a dashboard, and sends Critical alarms to alarmTopic where given', () => {
    const alarms = ofType('AWS::CloudWatch::Alarm');
    expect(alarms).toHaveLength(built.runners.reduce((n, r) => n + Object.keys(r.alarms).length, 0));
    expect(ofType('AWS::CloudWatch::Dashboard')).toHaveLength(built.runners.length);
    for (const runner of built.runners) expect(Object.keys(runner.alarms).length).toBeGreaterThanOrEqual(8);
    const topicId = Stack.of(built.topic).getLogicalId(built.topic.node.defaultChild as sns.CfnTopic);
    const [first] = built.runners;
    const stack = Stack.of(first);
    const critical = (runner: ToolRunner) => [
      runner.criticalAlarm,
      ...Object.entries(runner.alarms)
        .filter(([key]) => runner.alarmTiers[key as RunnerAlarm] === 'Critical')
        .map(([, a]) => a),
    ];
    expect(critical(first).length).toBeGreaterThan(1);
    for (const alarm of critical(first)) {
      const props = templates[0].resources[stack.getLogicalId(alarm.node.defaultChild as any)].Properties!;
      expect(props.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(props.OKActions).toEqual([{ Ref: topicId }]);
    }
    // Without alarmTopic the instance pages through a topic of its own.
    const second = built.runners[1];
    const ownTopic = stack.getLogicalId(second.alarmTopic.node.defaultChild as sns.CfnTopic);
    for (const alarm of critical(second))
      expect(templates[0].resources[stack.getLogicalId(alarm.node.defaultChild as any)].Properties!.AlarmActions).toEqual([
        { Ref: ownTopic },
      ]);
  });

  it('publishes each instance’s metrics in its own namespace, which its alarms read', () => {
    const namespaces = built.runners.map((r) => r.metricsNamespace);
    expect(new Set(namespaces).size).toBe(3);
    for (const runner of built.runners) {
      expect(runner.metricsNamespace).toMatch(/^toolrunner\/[A-Za-z0-9_-]+$/);
      const stack = Stack.of(runner);
      const resources = templates.find((t) => t.stack === stack)!.resources;
      const fn = resources[stack.getLogicalId(runner.functions.Execute.node.defaultChild as any)];
      expect(fn.Properties!.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE).toBe(runner.metricsNamespace);
      const unknown = resources[stack.getLogicalId(runner.alarms.unknownOutcomes.node.defaultChild as any)];
      expect(JSON.stringify(unknown.Properties!.Metrics)).toContain(`"Namespace":"${runner.metricsNamespace}"`);
    }
  });
});

describe('the props a library user sets', () => {
  it('are all readonly, and each optional one documents its @default', () => {
    const file = ts.createSourceFile('tool-runner.ts', readFileSync('infra/tool-runner.ts', 'utf8'), ts.ScriptTarget.Latest, true);
    const props = file.statements
      .filter((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text.startsWith('ToolRunner'))
      .flatMap((i) => i.members.filter(ts.isPropertySignature).map((m) => ({ name: `${i.name.text}.${m.name.getText(file)}`, m })));
    expect(props.map((p) => p.name)).toEqual(
      expect.arrayContaining(['ToolRunnerProps.tools', 'ToolRunnerProps.alarmTopic', 'ToolRunnerProps.throttling']),
    );
    for (const { name, m } of props) {
      expect(
        m.modifiers?.some((k) => k.kind === ts.SyntaxKind.ReadonlyKeyword),
        `${name} is readonly`,
      ).toBe(true);
      if (m.questionToken)
        expect(
          ts.getJSDocTags(m).some((t) => t.tagName.text === 'default'),
          `${name} has @default`,
        ).toBe(true);
    }
  });
});
