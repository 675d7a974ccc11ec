import { Duration } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { MetricName } from '../functions/core/metric-names';

/**
 * The line the sweeper logs when it resumed operations (`functions/handlers/steps.ts`); a metric filter
 * counts it. `test/infra/monitoring.test.ts` checks the handler still logs exactly this.
 */
export const SWEEPER_RESUMED_MESSAGE = 'resumed operations past their lease';

/** The runner's own metrics the alarms and dashboard read (`functions/core/metric-names.ts`, plus the sweeper's). */
export const WATCHED_METRICS = {
  unknownOutcomes: MetricName.unknownOutcomes,
  reviewsOpen: MetricName.reviewsOpen,
  approvalsWaiting: MetricName.approvalsWaiting,
  notificationFailures: MetricName.notificationFailures,
  toolCalls: MetricName.toolCalls,
  operationsResumed: 'OperationsResumed',
  operationBacklogAge: MetricName.operationBacklogAge,
  oldestApprovalTtlUsed: MetricName.oldestApprovalTtlUsed,
  statesApiThrottled: MetricName.statesApiThrottled,
} as const;

export interface RunnerMonitoringProps {
  readonly api: apigw.IHttpApi;
  readonly stateMachine: sfn.StateMachine;
  readonly expressStateMachine: sfn.StateMachine;
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  readonly tables: Readonly<Record<string, dynamodb.ITable>>;
  /** The sweeper's log group, where its resumptions are counted. */
  readonly sweeperLogs: logs.ILogGroup;
  /** Where the functions publish the runner's EMF metrics. */
  readonly metricsNamespace: string;
  /** Where Critical alarms and the composite over them send their state changes. */
  readonly alarmTopic: sns.ITopic;
  /** The topics whose failed deliveries (to people's addresses and endpoints) are watched. */
  readonly deliveryTopics: readonly sns.ITopic[];
  /** Every alarm's name starts with it and a hyphen: the alarms topic's policy allows exactly these alarms. */
  readonly alarmNamePrefix: string;
  /** Whether the alarms act at all (false: they change state on the dashboard, and page nobody). */
  readonly actionsEnabled: boolean;
  /** The API's longest wait (s): a request that runs past it by more than a little is running into its timeout. */
  readonly apiLongestWaitSeconds: number;
}

/** What each alarm watches; the keys of `ToolRunner.alarms`. */
export type RunnerAlarm =
  | 'executionsFailed'
  | 'expressExecutionsFailed'
  | 'executionsThrottled'
  | 'operationsResumed'
  | 'apiServerErrors'
  | 'apiLatency'
  | 'functionErrors'
  | 'stepErrors'
  | 'functionThrottles'
  | 'durationNearTimeout'
  | 'asyncEventsDropped'
  | 'tableReadThrottles'
  | 'tableWriteThrottles'
  | 'sweeperErrors'
  | 'unknownOutcomes'
  | 'reviewsOpen'
  | 'approvalAging'
  | 'notificationFailures'
  | 'notificationDeliveriesFailed'
  | 'sweeperStopped'
  | 'operationBacklogAge'
  | 'stepFunctionsApiThrottled';

/**
 * Critical: someone must act within the hour, so it pages (the alarms topic). Warning: worth a look at the
 * dashboard, pages nobody.
 */
export const AlarmTier = { critical: 'Critical', warning: 'Warning' } as const;
export type AlarmTier = (typeof AlarmTier)[keyof typeof AlarmTier];

/** The functions only the state machines invoke: their errors are rated apart from the workers' (10 metrics an alarm). */
const STEP_FUNCTIONS = ['Validate', 'RequestApproval', 'ExpireApproval', 'Report', 'Handoff'];

const PERIOD = Duration.minutes(5);
/** CloudWatch evaluates at most 10 metrics in one alarm's math expression. */
const MAX_METRICS_PER_ALARM = 10;
/** Below this many invocations (requests, attempts) in a period a rate says nothing, and the alarm reads 0. */
export const MIN_SAMPLES = 20;
/** The share of a function's timeout its longest run may reach before the alarm on durations fires (percent). */
const NEAR_TIMEOUT_PERCENT = 90;

function checkMetricCount(label: string, count: number): void {
  if (count > MAX_METRICS_PER_ALARM)
    throw new Error(`ToolRunner: the alarm "${label}" would read ${count} metrics; CloudWatch allows ${MAX_METRICS_PER_ALARM}`);
}

/** `FILL(m0, 0) + …` as one array sum: a missing datapoint counts as 0 (plain `m0 + m1` has no value where one is missing). */
function sumTerm(ids: string[]): string {
  return `SUM([${ids.map((id) => `FILL(${id}, 0)`).join(', ')}])`;
}

/** The sum of several metrics, a missing datapoint counting as 0. */
function sumOf(label: string, metrics: cloudwatch.IMetric[]): cloudwatch.IMetric {
  checkMetricCount(label, metrics.length);
  return new cloudwatch.MathExpression({
    expression: sumTerm(metrics.map((_, i) => `m${i}`)),
    usingMetrics: Object.fromEntries(metrics.map((m, i) => [`m${i}`, m])),
    label,
    period: PERIOD,
  });
}

/**
 * `part` over `whole` in percent, 0 while `whole` is under `MIN_SAMPLES` in the period: a single failure of
 * two calls is not a 50% error rate anyone should be paged for.
 */
function rateOf(label: string, part: cloudwatch.IMetric[], whole: cloudwatch.IMetric[], minSamples = MIN_SAMPLES): cloudwatch.IMetric {
  checkMetricCount(label, part.length + whole.length);
  const p = part.map((_, i) => `e${i}`);
  const w = whole.map((_, i) => `n${i}`);
  return new cloudwatch.MathExpression({
    expression: `IF(${sumTerm(w)} >= ${minSamples}, 100 * ${sumTerm(p)} / ${sumTerm(w)}, 0)`,
    usingMetrics: Object.fromEntries([...part.map((m, i) => [p[i], m]), ...whole.map((m, i) => [w[i], m])]),
    label,
    period: PERIOD,
  });
}

interface AlarmSpec {
  tier: AlarmTier;
  metric: cloudwatch.IMetric;
  threshold: number;
  description: string;
  /** Datapoints that must breach, of how many periods (M of N). */
  periods: [datapoints: number, of: number];
  below?: boolean;
  missingBreaches?: boolean;
}

/** One of the runner's own metrics (`functions/adapters/metrics.ts`): the `service` rollup every EMF line carries, one series per name. */
function ownMetric(namespace: string, name: string, statistic: 'Sum' | 'Maximum', label = name): cloudwatch.IMetric {
  return new cloudwatch.Metric({ namespace, metricName: name, dimensionsMap: { service: 'toolrunner' }, statistic, period: PERIOD, label });
}

/** Metrics Insights, for the dashboard only: one series over every dimension set the runner publishes. */
function runnerSeries(namespace: string, stat: 'SUM' | 'MAX', name: string, label = name): cloudwatch.IMetric {
  return new cloudwatch.MathExpression({ expression: `SELECT ${stat}(${name}) FROM "${namespace}"`, label, period: PERIOD });
}

/** The longest run of any function in the period, in percent of that function's own timeout. */
function nearTimeoutOf(functions: [string, lambda.IFunction][]): cloudwatch.IMetric {
  const timeouts = functions.map(([name, f]) => {
    const timeout = (f as lambda.Function).timeout;
    if (!timeout) throw new Error(`ToolRunner: function ${name} has no timeout to watch durations against`);
    return timeout.toMilliseconds();
  });
  checkMetricCount('Durations near the timeout', functions.length);
  return new cloudwatch.MathExpression({
    expression: `MAX([${timeouts.map((ms, i) => `100 * FILL(d${i}, 0) / ${ms}`).join(', ')}])`,
    usingMetrics: Object.fromEntries(functions.map(([, f], i) => [`d${i}`, f.metricDuration({ statistic: 'Maximum', period: PERIOD })])),
    label: 'Longest run, percent of its timeout',
    period: PERIOD,
  });
}

/** The API's p99 latency, 0 while it served under `MIN_SAMPLES` requests in the period. */
function apiLatencyOf(api: apigw.IHttpApi): cloudwatch.IMetric {
  return new cloudwatch.MathExpression({
    expression: `IF(FILL(n, 0) >= ${MIN_SAMPLES}, FILL(p, 0), 0)`,
    usingMetrics: {
      p: api.metricLatency({ statistic: 'p99', period: PERIOD }),
      n: api.metricCount({ statistic: 'Sum', period: PERIOD }),
    },
    label: 'API p99 latency (ms)',
    period: PERIOD,
  });
}

/** The Critical alarms: someone must act within the hour. */
function criticalAlarmSpecs(
  props: RunnerMonitoringProps,
): Record<'sweeperStopped' | 'operationBacklogAge' | 'reviewsOpen' | 'approvalAging', AlarmSpec> {
  const critical = AlarmTier.critical;
  const sweeper = props.functions.Sweeper as lambda.IFunction;
  const own = (name: string, statistic: 'Sum' | 'Maximum', label?: string) => ownMetric(props.metricsNamespace, name, statistic, label);
  return {
    sweeperStopped: {
      tier: critical,
      metric: sweeper.metricInvocations({ statistic: 'Sum', period: PERIOD }),
      threshold: 1,
      periods: [2, 2],
      below: true,
      // No datapoint is the failure watched for: a schedule that stopped invokes nothing at all.
      missingBreaches: true,
      description: 'The sweeper has not run for 10 minutes (its schedule runs it every minute): lost executions are not resumed.',
    },
    operationBacklogAge: {
      tier: critical,
      metric: own(WATCHED_METRICS.operationBacklogAge, 'Maximum', 'Operation backlog age (s)'),
      threshold: 600,
      periods: [2, 2],
      description: 'An operation past its lease has waited more than 10 minutes to be resumed: the sweeper falls behind or fails on it.',
    },
    reviewsOpen: {
      tier: critical,
      metric: own(WATCHED_METRICS.reviewsOpen, 'Maximum', 'Unknown outcomes waiting for a reviewer'),
      threshold: 1,
      periods: [2, 2],
      description:
        'Calls whose effect is unknown wait for a reviewer to settle them (GET /v1/reviews?status=open): their runs cannot go on until someone does.',
    },
    approvalAging: {
      tier: critical,
      metric: own(WATCHED_METRICS.oldestApprovalTtlUsed, 'Maximum', 'Oldest pending approval, percent of its TTL used'),
      threshold: 50,
      periods: [1, 1],
      description: 'An approval has waited half its time to live: nobody decides it, and its call fails when it expires.',
    },
  };
}

/** The Warning alarms, on the dashboard: rates over a minimum of samples, M of N periods. In this order. */
function warningAlarmSpecs(
  props: RunnerMonitoringProps,
  resumed: cloudwatch.IMetric,
): Omit<Record<RunnerAlarm, AlarmSpec>, keyof ReturnType<typeof criticalAlarmSpecs>> {
  return {
    ...executionAlarmSpecs(props, resumed),
    ...apiAlarmSpecs(props),
    ...functionAlarmSpecs(props),
    ...tableAlarmSpecs(props),
    ...runnerAlarmSpecs(props),
  };
}

/** Executions of either state machine: failed, timed out, throttled, or resumed by the sweeper. */
function executionAlarmSpecs(
  props: RunnerMonitoringProps,
  resumed: cloudwatch.IMetric,
): Record<'executionsFailed' | 'expressExecutionsFailed' | 'executionsThrottled' | 'operationsResumed', AlarmSpec> {
  const warning = AlarmTier.warning;
  const machines = [props.stateMachine, props.expressStateMachine];
  return {
    executionsFailed: {
      tier: warning,
      metric: rateOf(
        'Standard executions failed or timed out (%)',
        [props.stateMachine.metricFailed(), props.stateMachine.metricTimedOut()],
        [props.stateMachine.metricStarted()],
        5,
      ),
      threshold: 5,
      periods: [3, 5],
      description: 'Standard executions failed or timed out (5% of 5 or more started): their operations wait for the sweeper or a person.',
    },
    expressExecutionsFailed: {
      tier: warning,
      metric: rateOf(
        'Express executions failed or timed out (%)',
        [props.expressStateMachine.metricFailed(), props.expressStateMachine.metricTimedOut()],
        [props.expressStateMachine.metricStarted()],
      ),
      threshold: 10,
      periods: [3, 5],
      description:
        'Express executions failed or timed out (10% or more): some do by design (an attempt that could outlast it is handed on), more means the fast path is failing.',
    },
    executionsThrottled: {
      tier: warning,
      metric: sumOf(
        'Executions throttled',
        machines.map((m) => m.metricThrottled()),
      ),
      threshold: 1,
      periods: [3, 5],
      description: 'Step Functions throttled executions of either machine in 3 of 5 periods: calls stall until the sweeper resumes them.',
    },
    operationsResumed: {
      tier: warning,
      metric: resumed,
      threshold: 1,
      periods: [3, 5],
      description: 'The sweeper resumed operations past their lease in 3 of 5 periods: executions are being lost or stall.',
    },
  };
}

/** The HTTP API: server errors, and latency past the API's own longest wait. */
function apiAlarmSpecs(props: RunnerMonitoringProps): Record<'apiServerErrors' | 'apiLatency', AlarmSpec> {
  const warning = AlarmTier.warning;
  const latencyThresholdMs = Math.min(29_000, (props.apiLongestWaitSeconds + 2) * 1000);
  const apiLatency = apiLatencyOf(props.api);
  return {
    apiServerErrors: {
      tier: warning,
      metric: rateOf(
        'API 5xx (%)',
        [props.api.metricServerError({ statistic: 'Sum', period: PERIOD })],
        [props.api.metricCount({ statistic: 'Sum', period: PERIOD })],
      ),
      threshold: 5,
      periods: [3, 5],
      description: 'The HTTP API answered 5xx to 5% or more of its requests: the API Lambda failed or did not answer within 30 s.',
    },
    apiLatency: {
      tier: warning,
      metric: apiLatency,
      threshold: latencyThresholdMs,
      periods: [3, 5],
      description: `p99 API latency above ${latencyThresholdMs / 1000} s, 2 s past the API's longest wait: requests run longer than their own bound, toward the 30 s timeout.`,
    },
  };
}

/** The functions: error rates (workers and lifecycle steps apart), throttles, runs near the timeout, dropped events. */
function functionAlarmSpecs(
  props: RunnerMonitoringProps,
): Record<'functionErrors' | 'stepErrors' | 'functionThrottles' | 'durationNearTimeout' | 'asyncEventsDropped', AlarmSpec> {
  const warning = AlarmTier.warning;
  const functions = Object.entries(props.functions);
  const steps = functions.filter(([name]) => STEP_FUNCTIONS.includes(name));
  const workers = functions.filter(([name]) => !STEP_FUNCTIONS.includes(name));
  const errorRate = (label: string, group: [string, lambda.IFunction][]) =>
    rateOf(
      label,
      group.map(([, f]) => f.metricErrors({ period: PERIOD })),
      group.map(([, f]) => f.metricInvocations({ period: PERIOD })),
    );
  const nearTimeout = nearTimeoutOf(functions);
  return {
    functionErrors: {
      tier: warning,
      metric: errorRate('Worker function errors (%)', workers),
      threshold: 5,
      periods: [3, 5],
      description: 'Errors in 5% or more of the invocations of Api, Execute, Reconcile, the sweeper or Tools.',
    },
    stepErrors: {
      tier: warning,
      metric: errorRate('Lifecycle step errors (%)', steps),
      threshold: 5,
      periods: [3, 5],
      description:
        'Errors in 5% or more of the lifecycle steps’ invocations (a step that finds its operation moved fails by design, rarely).',
    },
    functionThrottles: {
      tier: warning,
      metric: sumOf(
        'Function throttles',
        functions.map(([, f]) => f.metricThrottles({ period: PERIOD })),
      ),
      threshold: 1,
      periods: [3, 5],
      description: 'Lambda throttled a function of this runner in 3 of 5 periods (the account’s concurrency, or a reservation).',
    },
    durationNearTimeout: {
      tier: warning,
      metric: nearTimeout,
      threshold: NEAR_TIMEOUT_PERCENT,
      periods: [2, 3],
      description: `A function ran ${NEAR_TIMEOUT_PERCENT}% of its timeout: the next slower run is cut off by Lambda.`,
    },
    asyncEventsDropped: {
      tier: warning,
      metric: sumOf(
        'Asynchronous events dropped',
        functions.map(([, f]) => f.metric('AsyncEventsDropped', { statistic: 'Sum', period: PERIOD })),
      ),
      threshold: 1,
      periods: [1, 1],
      description: 'Lambda dropped asynchronous events (a sweep the schedule sent) after their retries or age: that work never ran.',
    },
  };
}

/** The tables: throttled reads and writes. */
function tableAlarmSpecs(props: RunnerMonitoringProps): Record<'tableReadThrottles' | 'tableWriteThrottles', AlarmSpec> {
  const warning = AlarmTier.warning;
  const throttleEvents = (kind: 'Read' | 'Write') =>
    Object.entries(props.tables).map(([, t]) => t.metric(`${kind}ThrottleEvents`, { statistic: 'Sum', period: PERIOD }));
  return {
    tableReadThrottles: {
      tier: warning,
      metric: sumOf('Table read throttles', throttleEvents('Read')),
      threshold: 1,
      periods: [3, 5],
      description: 'DynamoDB throttled reads of a runner table in 3 of 5 periods.',
    },
    tableWriteThrottles: {
      tier: warning,
      metric: sumOf('Table write throttles', throttleEvents('Write')),
      threshold: 1,
      periods: [3, 5],
      description: 'DynamoDB throttled writes to a runner table in 3 of 5 periods.',
    },
  };
}

/** The sweeper's failures and what the runner counts itself: unknown outcomes, notifications, throttled Step Functions calls. */
function runnerAlarmSpecs(
  props: RunnerMonitoringProps,
): Record<
  'sweeperErrors' | 'unknownOutcomes' | 'notificationFailures' | 'notificationDeliveriesFailed' | 'stepFunctionsApiThrottled',
  AlarmSpec
> {
  const warning = AlarmTier.warning;
  const sweeper = props.functions.Sweeper as lambda.IFunction;
  const own = (name: string, statistic: 'Sum' | 'Maximum', label?: string) => ownMetric(props.metricsNamespace, name, statistic, label);
  return {
    sweeperErrors: {
      tier: warning,
      metric: rateOf('Sweeper errors (%)', [sweeper.metricErrors({ period: PERIOD })], [sweeper.metricInvocations({ period: PERIOD })], 3),
      threshold: 20,
      periods: [2, 3],
      description: 'The sweeper failed in 20% or more of its runs: lost executions are resumed late or not at all.',
    },
    unknownOutcomes: {
      tier: warning,
      metric: rateOf('Unknown outcomes (% of attempts)', [own(WATCHED_METRICS.unknownOutcomes, 'Sum')], [own(MetricName.attempts, 'Sum')]),
      threshold: 5,
      periods: [3, 5],
      description: 'Attempts whose effect is unknown, 5% or more of attempts: an upstream times out after receiving requests.',
    },
    notificationFailures: {
      tier: warning,
      metric: own(WATCHED_METRICS.notificationFailures, 'Sum', 'Notification failures'),
      threshold: 1,
      periods: [1, 1],
      description: 'Approval or review notifications the runner could not hand over (webhook, SNS): approvers may not know a call waits.',
    },
    notificationDeliveriesFailed: {
      tier: warning,
      metric: sumOf(
        'SNS deliveries failed',
        props.deliveryTopics.map((t) => t.metric('NumberOfNotificationsFailed', { statistic: 'Sum', period: PERIOD })),
      ),
      threshold: 1,
      periods: [1, 1],
      description: 'SNS could not deliver messages of the links, notices or alarms topic to a subscriber (an address, an endpoint).',
    },
    stepFunctionsApiThrottled: {
      tier: warning,
      metric: own(WATCHED_METRICS.statesApiThrottled, 'Sum', 'Step Functions API calls throttled'),
      threshold: 1,
      periods: [3, 5],
      description:
        'Step Functions throttled this runner’s API calls (StartExecution, SendTaskSuccess…) in 3 of 5 periods, counted by the runner: calls stall until retried or resumed.',
    },
  };
}

/**
 * One instance's alarms, the composite over its Critical ones, and its dashboard. Critical alarms watch what
 * a person must act on within the hour: the sweeper stopped, operations waiting to be resumed, unknown
 * outcomes waiting for a reviewer, an approval past half its time. Warnings (rates over a minimum of
 * samples, M of N periods) are on the dashboard.
 */
export class RunnerMonitoring extends Construct {
  readonly alarms: Record<RunnerAlarm, cloudwatch.Alarm>;
  /** Each alarm's tier. */
  readonly tiers: Record<RunnerAlarm, AlarmTier>;
  /** In ALARM while any Critical alarm is. */
  readonly critical: cloudwatch.CompositeAlarm;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: RunnerMonitoringProps) {
    super(scope, id);
    const resumed = this.buildResumedMetric(props);
    // Critical first: the alarms are created, and listed, in this order.
    const specs: Record<RunnerAlarm, AlarmSpec> = { ...criticalAlarmSpecs(props), ...warningAlarmSpecs(props, resumed) };
    const action = new actions.SnsAction(props.alarmTopic);
    this.tiers = Object.fromEntries(Object.entries(specs).map(([key, spec]) => [key, spec.tier])) as Record<RunnerAlarm, AlarmTier>;
    this.alarms = this.buildAlarms(specs, props, action);
    this.critical = this.buildCriticalAlarm(specs, props, action);
    this.dashboard = this.buildDashboard(props, resumed);
  }

  /** Sweeps that resumed operations, counted from the line the sweeper logs (a metric filter on its log group). */
  private buildResumedMetric(props: RunnerMonitoringProps): cloudwatch.IMetric {
    return new logs.MetricFilter(this, 'OperationsResumedFilter', {
      logGroup: props.sweeperLogs,
      filterPattern: logs.FilterPattern.stringValue('$.message', '=', SWEEPER_RESUMED_MESSAGE),
      metricNamespace: props.metricsNamespace,
      metricName: WATCHED_METRICS.operationsResumed,
      metricValue: '1',
    }).metric({ statistic: 'Sum', period: PERIOD, label: 'Sweeps that resumed operations' });
  }

  /** One alarm per spec, named `<prefix>-<Key>`; the Critical ones page through the alarms topic, into ALARM and back. */
  private buildAlarms(
    specs: Record<RunnerAlarm, AlarmSpec>,
    props: RunnerMonitoringProps,
    action: actions.SnsAction,
  ): Record<RunnerAlarm, cloudwatch.Alarm> {
    return Object.fromEntries(
      Object.entries(specs).map(([key, spec]) => {
        const [datapointsToAlarm, evaluationPeriods] = spec.periods;
        const name = key[0].toUpperCase() + key.slice(1);
        const alarm = new cloudwatch.Alarm(this, name, {
          alarmName: `${props.alarmNamePrefix}-${name}`,
          metric: spec.metric,
          threshold: spec.threshold,
          evaluationPeriods,
          datapointsToAlarm,
          actionsEnabled: props.actionsEnabled,
          comparisonOperator: spec.below
            ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
            : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: spec.missingBreaches ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
          alarmDescription: `${spec.tier}: ${spec.description}`,
        });
        if (spec.tier === AlarmTier.critical) {
          alarm.addAlarmAction(action);
          alarm.addOkAction(action);
        }
        return [key, alarm];
      }),
    ) as Record<RunnerAlarm, cloudwatch.Alarm>;
  }

  /** The composite over the Critical alarms, paging as they do. */
  private buildCriticalAlarm(
    specs: Record<RunnerAlarm, AlarmSpec>,
    props: RunnerMonitoringProps,
    action: actions.SnsAction,
  ): cloudwatch.CompositeAlarm {
    const criticals = (Object.keys(specs) as RunnerAlarm[]).filter((k) => specs[k].tier === AlarmTier.critical).map((k) => this.alarms[k]);
    const critical = new cloudwatch.CompositeAlarm(this, 'Critical', {
      compositeAlarmName: `${props.alarmNamePrefix}-Critical`,
      alarmRule: cloudwatch.AlarmRule.anyOf(...criticals),
      actionsEnabled: props.actionsEnabled,
      alarmDescription: 'Critical: one of this runner’s Critical alarms is in ALARM; a person must act within the hour (docs/operate.md).',
    });
    critical.addAlarmAction(action);
    critical.addOkAction(action);
    return critical;
  }

  /** The dashboard: alarms, API, executions, functions, tables and the runner's own metrics. */
  private buildDashboard(props: RunnerMonitoringProps, resumed: cloudwatch.IMetric): cloudwatch.Dashboard {
    const functions = Object.entries(props.functions);
    const tables = Object.entries(props.tables);
    const runner = (stat: 'SUM' | 'MAX', name: string, label?: string) => runnerSeries(props.metricsNamespace, stat, name, label);
    const graph = (title: string, left: cloudwatch.IMetric[], width = 8) => new cloudwatch.GraphWidget({ title, left, width, height: 6 });
    const perFunction = (metric: (f: lambda.IFunction) => cloudwatch.IMetric) =>
      functions.map(([name, f]) => (metric(f) as cloudwatch.Metric).with({ label: name, period: PERIOD }));
    const executions = (m: sfn.StateMachine) => [
      m.metricStarted(),
      m.metricSucceeded(),
      m.metricFailed(),
      m.metricTimedOut(),
      m.metricAborted(),
      m.metricThrottled(),
    ];
    return new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
      widgets: [
        [
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: [this.critical, ...Object.values(this.alarms)],
            width: 24,
            height: 4,
          }),
        ],
        [
          graph('API requests', [
            props.api.metricCount({ statistic: 'Sum', period: PERIOD }),
            props.api.metricClientError({ statistic: 'Sum', period: PERIOD }),
            props.api.metricServerError({ statistic: 'Sum', period: PERIOD }),
          ]),
          graph('API latency (ms)', [
            props.api.metricLatency({ statistic: 'p50', period: PERIOD }),
            props.api.metricLatency({ statistic: 'p99', period: PERIOD }),
            props.api.metricIntegrationLatency({ statistic: 'p99', period: PERIOD }),
          ]),
          graph('Tool calls by outcome', [
            new cloudwatch.MathExpression({
              expression: `SELECT SUM(${WATCHED_METRICS.toolCalls}) FROM "${props.metricsNamespace}" GROUP BY outcome`,
              label: 'Tool calls',
              period: PERIOD,
            }),
          ]),
        ],
        [
          graph('Standard executions', executions(props.stateMachine), 12),
          graph('Express executions', executions(props.expressStateMachine), 12),
        ],
        [
          graph(
            'Function errors',
            perFunction((f) => f.metricErrors()),
          ),
          graph(
            'Function throttles',
            perFunction((f) => f.metricThrottles()),
          ),
          graph(
            'Function duration p99 (ms)',
            perFunction((f) => f.metricDuration({ statistic: 'p99' })),
          ),
        ],
        [
          graph(
            'Table throttles (read + write)',
            tables.flatMap(([name, t]) => [
              t.metric('ReadThrottleEvents', { statistic: 'Sum', period: PERIOD, label: `${name} read` }),
              t.metric('WriteThrottleEvents', { statistic: 'Sum', period: PERIOD, label: `${name} write` }),
            ]),
            12,
          ),
          graph(
            'Table write units',
            tables.map(([name, t]) => t.metricConsumedWriteCapacityUnits({ period: PERIOD, label: name })),
            12,
          ),
        ],
        [
          graph(
            'Waiting for people',
            [
              runner('MAX', WATCHED_METRICS.approvalsWaiting, 'Approvals waiting'),
              runner('MAX', WATCHED_METRICS.reviewsOpen, 'Reviews open'),
            ],
            12,
          ),
          graph(
            'Unknown outcomes, failed notifications, resumptions',
            [
              runner('SUM', WATCHED_METRICS.unknownOutcomes, 'Unknown outcomes'),
              runner('SUM', WATCHED_METRICS.notificationFailures, 'Notification failures'),
              resumed,
            ],
            12,
          ),
        ],
      ],
    });
  }
}
