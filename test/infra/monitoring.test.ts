import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../../functions/core/metric-names';
import { FUNCTION_NAMES } from '../../infra/functions';
import { SWEEPER_RESUMED_MESSAGE, WATCHED_METRICS } from '../../infra/monitoring';
import type { ToolRunner } from '../../infra/tool-runner';
import { synthDemo } from '../support/synth';

type Resource = { Type: string; Properties: Record<string, any> };
type MetricDataQuery = {
  Id: string;
  Expression?: string;
  MetricStat?: { Metric: { MetricName: string; Dimensions?: { Name: string; Value: any }[] } };
};

describe('alarms and dashboard', () => {
  let runner: ToolRunner;
  let logicalId: (construct: { node: { defaultChild?: unknown } }) => string;
  let resource: (construct: { node: { defaultChild?: unknown } }) => Resource;
  let all: Resource[];
  beforeAll(() => {
    const { stack, template } = synthDemo();
    runner = stack.runner;
    const byId = template.toJSON().Resources as Record<string, Resource>;
    all = Object.values(byId);
    logicalId = (construct) => stack.getLogicalId(construct.node.defaultChild as any);
    resource = (construct) => byId[logicalId(construct)];
  }, 120_000);
  const queries = (key: keyof ToolRunner['alarms']) => resource(runner.alarms[key]).Properties.Metrics as MetricDataQuery[];
  const dimensionRefs = (key: keyof ToolRunner['alarms'], name: string) =>
    queries(key).flatMap((q) => (q.MetricStat?.Metric.Dimensions ?? []).filter((d) => d.Name === name).map((d) => d.Value.Ref as string));

  it('sums errors and throttles over every function and every table, within the 10 metrics an alarm may use', () => {
    for (const key of ['functionErrors', 'functionThrottles'] as const)
      expect(dimensionRefs(key, 'FunctionName')).toHaveLength(FUNCTION_NAMES.length);
    for (const key of ['tableReadThrottles', 'tableWriteThrottles'] as const)
      expect(dimensionRefs(key, 'TableName')).toHaveLength(Object.keys(runner.tables).length);
    for (const alarm of all.filter((r) => r.Type === 'AWS::CloudWatch::Alarm')) {
      const metrics = (alarm.Properties.Metrics ?? []) as MetricDataQuery[];
      expect(metrics.filter((q) => q.MetricStat).length).toBeLessThanOrEqual(10);
      // A plain m0 + m1 has no value where either misses a datapoint; every sum fills them with 0.
      for (const q of metrics.filter((m) => m.Expression && !m.Expression.startsWith('SELECT')))
        expect(q.Expression).toMatch(/^SUM\(\[FILL\(m0, 0\)/);
    }
  });

  it("reads the runner's metrics by the names the code publishes, from the instance's own namespace", () => {
    for (const name of [
      WATCHED_METRICS.unknownOutcomes,
      WATCHED_METRICS.reviewsOpen,
      WATCHED_METRICS.approvalsWaiting,
      WATCHED_METRICS.toolCalls,
    ])
      expect(Object.values(MetricName)).toContain(name);
    // NotificationFailures{channel} is published by the approvers' notifier; the alarm watches that name already.
    expect(WATCHED_METRICS.notificationFailures).toBe('NotificationFailures');
    const select = (key: keyof ToolRunner['alarms']) => queries(key).find((q) => q.Expression?.startsWith('SELECT'))?.Expression;
    expect(select('unknownOutcomes')).toBe(`SELECT SUM(UnknownOutcomes) FROM "${runner.metricsNamespace}"`);
    expect(select('reviewsOpen')).toBe(`SELECT MAX(ReviewsOpen) FROM "${runner.metricsNamespace}"`);
    expect(select('notificationFailures')).toBe(`SELECT SUM(NotificationFailures) FROM "${runner.metricsNamespace}"`);
  });

  it("counts the sweeper's resumptions from the line it logs", () => {
    expect(readFileSync('functions/handlers/sweeper.ts', 'utf8')).toContain(`logger.warn('${SWEEPER_RESUMED_MESSAGE}'`);
    const [filter] = all.filter((r) => r.Type === 'AWS::Logs::MetricFilter');
    expect(filter.Properties.FilterPattern).toBe(`{ $.message = "${SWEEPER_RESUMED_MESSAGE}" }`);
    expect(filter.Properties.LogGroupName).toEqual({ Ref: logicalId(runner.functions.Sweeper.logGroup) });
  });

  it('shows every alarm on the dashboard', () => {
    const [dashboard] = all.filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    expect(Object.keys(runner.alarms).length).toBeGreaterThanOrEqual(8);
    for (const alarm of Object.values(runner.alarms)) expect(body).toContain(`"${logicalId(alarm)}"`);
  });

  it('pages when the sweeper stops, when the backlog ages, and when Step Functions throttles the runner’s API calls', () => {
    const stopped = resource(runner.alarms.sweeperStopped).Properties;
    expect(stopped).toMatchObject({
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
      Threshold: 1,
      EvaluationPeriods: 2,
    });
    expect(stopped.MetricName).toBe('Invocations');
    expect(JSON.stringify(stopped.Dimensions)).toContain(logicalId(runner.functions.Sweeper));
    const backlog = queries('operationBacklogAge');
    expect(backlog.some((q) => q.Expression?.includes(`MAX(${MetricName.operationBacklogAge})`))).toBe(true);
    const throttled = queries('stepFunctionsApiThrottled').filter((q) => q.MetricStat);
    expect(throttled.map((q) => q.MetricStat!.Metric.MetricName)).toEqual(Array(5).fill('ThrottledEvents'));
    // Every alarm pages the alarms topic the construct made (the demo stack gives none).
    const topic = logicalId(runner.alarmTopic as never);
    for (const alarm of Object.values(runner.alarms)) expect(resource(alarm).Properties.AlarmActions).toEqual([{ Ref: topic }]);
  });
});
