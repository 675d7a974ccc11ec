import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../../functions/core/metric-names';
import { FUNCTION_NAMES, FUNCTIONS } from '../../infra/functions';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { AlarmTier, SWEEPER_RESUMED_MESSAGE, WATCHED_METRICS, type RunnerAlarm } from '../../infra/monitoring';
import { ToolRunner } from '../../infra/tool-runner';
import { synthDemo } from '../support/synth';

type Resource = { Type: string; Properties: Record<string, any> };
type MetricDataQuery = {
  Id: string;
  Expression?: string;
  MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: any }[] }; Stat: string };
};

const CRITICAL: RunnerAlarm[] = ['sweeperStopped', 'operationBacklogAge', 'reviewsOpen', 'approvalAging'];

/** A runner in a stack of its own, with the given props (bundling skipped). */
function synthRunner(props: Partial<ConstructorParameters<typeof ToolRunner>[2]> = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Other', { env: { account: '123456789012', region: 'eu-west-1' } });
  const runner = new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  return {
    stack,
    runner,
    warnings: () =>
      Annotations.fromStack(stack)
        .findWarning('*', Match.anyValue())
        .map((w) => String(w.entry.data)),
  };
}

describe('alarms and dashboard', () => {
  let runner: ToolRunner;
  let logicalId: (construct: { node: { defaultChild?: unknown } }) => string;
  let resource: (construct: { node: { defaultChild?: unknown } }) => Resource;
  let all: Resource[];
  let byId: Record<string, Resource>;
  let warnings: string[];
  beforeAll(() => {
    const { stack, template } = synthDemo();
    runner = stack.runner;
    byId = template.toJSON().Resources as Record<string, Resource>;
    all = Object.values(byId);
    logicalId = (construct) => stack.getLogicalId(construct.node.defaultChild as any);
    resource = (construct) => byId[logicalId(construct)];
    warnings = Annotations.fromStack(stack)
      .findWarning('*', Match.anyValue())
      .map((w) => String(w.entry.data));
  }, 120_000);
  const props = (key: RunnerAlarm) => resource(runner.alarms[key]).Properties;
  const queries = (key: RunnerAlarm) => (props(key).Metrics ?? []) as MetricDataQuery[];
  const expression = (key: RunnerAlarm) => queries(key).find((q) => q.Expression)?.Expression;
  /** The one metric an alarm reads, whether CloudFormation has it plainly or as its only query. */
  const single = (key: RunnerAlarm) => {
    const p = props(key);
    if (!p.Metrics) return { Namespace: p.Namespace, MetricName: p.MetricName, Stat: p.Statistic, Threshold: p.Threshold };
    const [q] = queries(key);
    expect(queries(key)).toHaveLength(1);
    return { ...q.MetricStat!.Metric, Stat: q.MetricStat!.Stat, Threshold: p.Threshold };
  };
  const dimensionRefs = (key: RunnerAlarm, name: string) =>
    queries(key).flatMap((q) => (q.MetricStat?.Metric.Dimensions ?? []).filter((d) => d.Name === name).map((d) => d.Value.Ref as string));

  it('pages only for Critical alarms and the composite over them; Warning alarms page nobody and are on the dashboard', () => {
    const topic = logicalId(runner.alarmTopic as never);
    expect(
      Object.entries(runner.alarmTiers)
        .filter(([, tier]) => tier === AlarmTier.critical)
        .map(([key]) => key),
    ).toEqual(expect.arrayContaining(CRITICAL));
    for (const [key, tier] of Object.entries(runner.alarmTiers) as [RunnerAlarm, AlarmTier][]) {
      const p = props(key);
      expect(p.AlarmDescription.startsWith(`${tier}: `)).toBe(true);
      if (CRITICAL.includes(key)) {
        expect(tier).toBe(AlarmTier.critical);
        expect(p.AlarmActions).toEqual([{ Ref: topic }]);
        expect(p.OKActions).toEqual([{ Ref: topic }]);
      } else {
        expect(tier).toBe(AlarmTier.warning);
        expect(p.AlarmActions).toBeUndefined();
        expect(p.OKActions).toBeUndefined();
      }
    }
    const composite = resource(runner.criticalAlarm);
    expect(composite.Type).toBe('AWS::CloudWatch::CompositeAlarm');
    expect(composite.Properties.AlarmActions).toEqual([{ Ref: topic }]);
    const rule = JSON.stringify(composite.Properties.AlarmRule);
    for (const key of CRITICAL) expect(rule).toContain(logicalId(runner.alarms[key]));
    expect(rule.match(/ALARM\(/g)).toHaveLength(CRITICAL.length);
    const [dashboard] = all.filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const alarm of [...Object.values(runner.alarms), runner.criticalAlarm]) expect(body).toContain(`"${logicalId(alarm)}"`);
  });

  it('lets cloudwatch.amazonaws.com publish to the alarms topic, for this account’s alarms of this instance only', () => {
    const policies = all.filter(
      (r) =>
        r.Type === 'AWS::SNS::TopicPolicy' &&
        JSON.stringify(r.Properties.Topics) === JSON.stringify([{ Ref: logicalId(runner.alarmTopic as never) }]),
    );
    expect(policies).toHaveLength(1);
    const allow = policies[0].Properties.PolicyDocument.Statement.find((s: any) => s.Effect === 'Allow');
    expect(allow).toMatchObject({
      Action: 'sns:Publish',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Condition: { StringEquals: { 'aws:SourceAccount': '123456789012' } },
    });
    const sourceArn = JSON.stringify(allow.Condition.ArnLike['aws:SourceArn']);
    expect(sourceArn).toContain(':cloudwatch:eu-west-1:123456789012:alarm:');
    // Every alarm's name falls under the pattern the policy allows.
    const prefix = /alarm:([^"*]+)\*/.exec(sourceArn)![1];
    for (const alarm of [...Object.values(runner.alarms), runner.criticalAlarm]) {
      const r = resource(alarm).Properties;
      expect(String(r.AlarmName)).toMatch(new RegExp(`^${prefix.replace(/[.-]/g, '\\$&')}`));
    }
  });

  it('encrypts the alarms topic with a customer-managed key whose policy lets CloudWatch use it (not alias/aws/sns)', () => {
    const topic = resource(runner.alarmTopic as never).Properties;
    expect(JSON.stringify(topic.KmsMasterKeyId)).not.toContain('alias/aws/sns');
    const keyId = topic.KmsMasterKeyId['Fn::GetAtt'][0];
    expect(byId[keyId].Type).toBe('AWS::KMS::Key');
    const grant = byId[keyId].Properties.KeyPolicy.Statement.find((s: any) => s.Principal?.Service === 'cloudwatch.amazonaws.com');
    expect(grant).toMatchObject({ Effect: 'Allow', Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] });
  });

  it('warns at synth when no alarmTopic and no alarmEmails are given, and not otherwise', () => {
    expect(warnings.some((w) => w.includes('no alarmTopic and no alarmEmails'))).toBe(true);
    expect(
      synthRunner({ alarmEmails: ['oncall@example.com'] })
        .warnings()
        .some((w) => w.includes('no alarmTopic')),
    ).toBe(false);
  });

  it('takes alarmNamePrefix and actionsEnabled', () => {
    const { stack, runner: other } = synthRunner({
      alarmNamePrefix: 'payments-prod',
      actionsEnabled: false,
      alarmEmails: ['a@example.com'],
    });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
    const alarm = resources[stack.getLogicalId(other.alarms.sweeperStopped.node.defaultChild as never)];
    expect(alarm.Properties.AlarmName).toBe('payments-prod-SweeperStopped');
    expect(alarm.Properties.ActionsEnabled).toBe(false);
    // With a topic of the user's own, the construct makes no topic and no key.
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const s = new Stack(app, 'Own', { env: { account: '123456789012', region: 'eu-west-1' } });
    const topic = new sns.Topic(s, 'Paging');
    const withTopic = new ToolRunner(s, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, alarmTopic: topic });
    expect(withTopic.alarmTopic).toBe(topic);
    expect(withTopic.alarmTopicKey).toBeUndefined();
  });

  it('rates errors over invocations with a minimum of samples, and wants M of N datapoints', () => {
    for (const key of [
      'apiServerErrors',
      'functionErrors',
      'stepErrors',
      'unknownOutcomes',
      'executionsFailed',
      'expressExecutionsFailed',
    ] as const) {
      expect(expression(key)).toMatch(/^IF\(SUM\(\[FILL\(n0, 0\).*\]\) >= \d+, 100 \* SUM\(\[FILL\(e0, 0\).*\]\) \/ SUM\(\[FILL\(n0, 0\)/);
      expect(Number(/>= (\d+)/.exec(expression(key)!)![1])).toBeGreaterThanOrEqual(5);
    }
    // No Warning alarm fires on a single datapoint of a single period where a rate or count can flicker.
    for (const key of [
      'apiServerErrors',
      'functionErrors',
      'stepErrors',
      'unknownOutcomes',
      'functionThrottles',
      'executionsThrottled',
    ] as const) {
      expect(props(key).DatapointsToAlarm).toBeGreaterThanOrEqual(3);
      expect(props(key).EvaluationPeriods).toBe(5);
    }
    // Errors and invocations of every function, in two alarms of at most 10 metrics each.
    const errors = [...dimensionRefs('functionErrors', 'FunctionName'), ...dimensionRefs('stepErrors', 'FunctionName')];
    expect(new Set(errors).size).toBe(FUNCTION_NAMES.length);
    for (const key of ['tableReadThrottles', 'tableWriteThrottles'] as const)
      expect(dimensionRefs(key, 'TableName')).toHaveLength(Object.keys(runner.tables).length);
    for (const alarm of all.filter((r) => r.Type === 'AWS::CloudWatch::Alarm')) {
      const metrics = (alarm.Properties.Metrics ?? []) as MetricDataQuery[];
      expect(metrics.filter((q) => q.MetricStat).length).toBeLessThanOrEqual(10);
      // No alarm reads a Metrics Insights query: it cannot take part in math, and template mode evaluates metrics.
      for (const q of metrics) expect(q.Expression ?? '').not.toMatch(/^SELECT/);
    }
  });

  it('reads no metric another stack shares: its own namespace, or AWS metrics with its own resources as dimensions', () => {
    for (const alarm of all.filter((r) => r.Type === 'AWS::CloudWatch::Alarm')) {
      const p = alarm.Properties;
      const metrics = p.Metrics
        ? (p.Metrics as MetricDataQuery[]).flatMap((q) => (q.MetricStat ? [q.MetricStat.Metric] : []))
        : [{ Namespace: p.Namespace, MetricName: p.MetricName, Dimensions: p.Dimensions }];
      for (const m of metrics) {
        if (m.Namespace === runner.metricsNamespace) continue;
        // Every AWS metric is narrowed to one of this stack's resources (a Ref or GetAtt), never an account-wide figure.
        expect(m.Dimensions?.length, `${p.AlarmName} reads ${m.Namespace}/${m.MetricName}`).toBeGreaterThan(0);
        for (const d of m.Dimensions ?? []) expect(typeof d.Value === 'object', `${p.AlarmName}: ${d.Name}`).toBe(true);
      }
    }
    const throttled = queries('stepFunctionsApiThrottled');
    expect(throttled.map((q) => q.MetricStat?.Metric)).toEqual([
      {
        Namespace: runner.metricsNamespace,
        MetricName: MetricName.statesApiThrottled,
        Dimensions: [{ Name: 'service', Value: 'toolrunner' }],
      },
    ]);
    expect(JSON.stringify(all.filter((r) => r.Type === 'AWS::CloudWatch::Alarm'))).not.toContain(
      'AWS/States","MetricName":"ThrottledEvents',
    );
  });

  it('watches failed notification deliveries, dropped asynchronous events, durations near the timeout and aging approvals', () => {
    const deliveries = queries('notificationDeliveriesFailed').filter((q) => q.MetricStat);
    expect(deliveries.map((q) => q.MetricStat!.Metric.MetricName)).toEqual(Array(3).fill('NumberOfNotificationsFailed'));
    expect(deliveries.map((q) => q.MetricStat!.Metric.Dimensions![0].Value)).toEqual(
      expect.arrayContaining([{ 'Fn::GetAtt': [logicalId(runner.approvalTopic), 'TopicName'] }]),
    );
    const dropped = queries('asyncEventsDropped').filter((q) => q.MetricStat);
    expect(dropped.map((q) => q.MetricStat!.Metric.MetricName)).toEqual(Array(FUNCTION_NAMES.length).fill('AsyncEventsDropped'));
    // Each function's longest run against its own timeout.
    const near = expression('durationNearTimeout')!;
    for (const name of FUNCTION_NAMES) expect(near).toContain(`/ ${FUNCTIONS[name].timeoutSeconds * 1000}`);
    expect(
      queries('durationNearTimeout')
        .filter((q) => q.MetricStat)
        .every((q) => q.MetricStat!.Stat === 'Maximum'),
    ).toBe(true);
    expect(props('durationNearTimeout').Threshold).toBe(90);
    expect(single('approvalAging')).toMatchObject({ Threshold: 50, MetricName: MetricName.oldestApprovalTtlUsed, Stat: 'Maximum' });
  });

  it('the p99 latency alarm can fire: its threshold is just past the API’s longest wait, under the 30 s timeout', () => {
    const threshold = props('apiLatency').Threshold;
    // Without reserved concurrency the longest wait is API Gateway's 25 s (infra/tool-runner.ts longestWaitSeconds).
    expect(threshold).toBe(27_000);
    expect(threshold).toBeLessThan(30_000);
    expect(expression('apiLatency')).toBe('IF(FILL(n, 0) >= 20, FILL(p, 0), 0)');
  });

  it("reads the runner's metrics by the names the code publishes, from the instance's own namespace", () => {
    for (const name of Object.values(WATCHED_METRICS).filter((n) => n !== WATCHED_METRICS.operationsResumed))
      expect(Object.values(MetricName)).toContain(name);
    const stat = (key: RunnerAlarm, name: string) =>
      props(key).MetricName === name ? props(key) : queries(key).find((q) => q.MetricStat?.Metric.MetricName === name)?.MetricStat?.Metric;
    expect(stat('reviewsOpen', MetricName.reviewsOpen)).toMatchObject({ Namespace: runner.metricsNamespace });
    expect(stat('unknownOutcomes', MetricName.unknownOutcomes)).toMatchObject({ Namespace: runner.metricsNamespace });
    expect(stat('notificationFailures', MetricName.notificationFailures)).toMatchObject({ Namespace: runner.metricsNamespace });
  });

  it("counts the sweeper's resumptions from the line it logs", () => {
    expect(readFileSync('functions/handlers/sweeper.ts', 'utf8')).toContain(`logger.warn('${SWEEPER_RESUMED_MESSAGE}'`);
    const [filter] = all.filter((r) => r.Type === 'AWS::Logs::MetricFilter');
    expect(filter.Properties.FilterPattern).toBe(`{ $.message = "${SWEEPER_RESUMED_MESSAGE}" }`);
    expect(filter.Properties.LogGroupName).toEqual({ Ref: logicalId(runner.functions.Sweeper.logGroup) });
  });

  it('pages when the sweeper stops and when the backlog ages', () => {
    expect(props('sweeperStopped')).toMatchObject({
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
      Threshold: 1,
      EvaluationPeriods: 2,
      MetricName: 'Invocations',
    });
    expect(JSON.stringify(props('sweeperStopped').Dimensions)).toContain(logicalId(runner.functions.Sweeper));
    expect(single('operationBacklogAge')).toMatchObject({ MetricName: MetricName.operationBacklogAge, Stat: 'Maximum', Threshold: 600 });
  });
});
