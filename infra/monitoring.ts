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
  /** Where every alarm (and its return to OK) is sent. */
  readonly alarmTopic: sns.ITopic;
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
  | 'functionThrottles'
  | 'tableReadThrottles'
  | 'tableWriteThrottles'
  | 'sweeperErrors'
  | 'unknownOutcomes'
  | 'reviewsOpen'
  | 'notificationFailures'
  | 'sweeperStopped'
  | 'operationBacklogAge'
  | 'stepFunctionsApiThrottled';

/** The Step Functions API calls the runner's functions make (`infra/permissions.ts`), whose throttling stalls calls. */
const STATES_APIS = ['StartExecution', 'StartSyncExecution', 'StopExecution', 'SendTaskSuccess', 'SendTaskFailure'] as const;

const PERIOD = Duration.minutes(5);
/** CloudWatch evaluates at most 10 metrics in one alarm's math expression. */
const MAX_METRICS_PER_ALARM = 10;

/** The sum of several metrics, a missing datapoint counting as 0 (plain `m0 + m1` has no value where one is missing). */
function sumOf(label: string, metrics: cloudwatch.IMetric[]): cloudwatch.IMetric {
  if (metrics.length > MAX_METRICS_PER_ALARM)
    throw new Error(`ToolRunner: the alarm "${label}" would sum ${metrics.length} metrics; CloudWatch allows ${MAX_METRICS_PER_ALARM}`);
  return new cloudwatch.MathExpression({
    expression: `SUM([${metrics.map((_, i) => `FILL(m${i}, 0)`).join(', ')}])`,
    usingMetrics: Object.fromEntries(metrics.map((m, i) => [`m${i}`, m])),
    label,
    period: PERIOD,
  });
}

/**
 * One instance's alarms and dashboard: executions that failed, timed out or were throttled on either
 * machine, operations the sweeper had to resume, the API's 5xx and latency, errors and throttles of every
 * function and table, the sweeper's own errors, unknown outcomes, open reviews and failed notifications.
 */
export class RunnerMonitoring extends Construct {
  readonly alarms: Record<RunnerAlarm, cloudwatch.Alarm>;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: RunnerMonitoringProps) {
    super(scope, id);
    const machines = [props.stateMachine, props.expressStateMachine];
    const functions = Object.entries(props.functions);
    const tables = Object.entries(props.tables);
    const runner = (stat: 'SUM' | 'MAX', name: string, label = name) =>
      // Metrics Insights: one series over every dimension set the runner publishes (tool, outcome, channel…).
      new cloudwatch.MathExpression({ expression: `SELECT ${stat}(${name}) FROM "${props.metricsNamespace}"`, label, period: PERIOD });
    const resumed = new logs.MetricFilter(this, 'OperationsResumedFilter', {
      logGroup: props.sweeperLogs,
      filterPattern: logs.FilterPattern.stringValue('$.message', '=', SWEEPER_RESUMED_MESSAGE),
      metricNamespace: props.metricsNamespace,
      metricName: WATCHED_METRICS.operationsResumed,
      metricValue: '1',
    }).metric({ statistic: 'Sum', period: PERIOD, label: 'Sweeps that resumed operations' });
    const throttleEvents = (kind: 'Read' | 'Write') =>
      tables.map(([, t]) => t.metric(`${kind}ThrottleEvents`, { statistic: 'Sum', period: PERIOD }));

    const specs: Record<
      RunnerAlarm,
      {
        metric: cloudwatch.IMetric;
        threshold: number;
        description: string;
        periods?: [number, number];
        below?: boolean;
        missingBreaches?: boolean;
      }
    > = {
      executionsFailed: {
        metric: sumOf('Standard executions failed or timed out', [props.stateMachine.metricFailed(), props.stateMachine.metricTimedOut()]),
        threshold: 1,
        description: 'Standard executions failed or timed out: their operations wait for the sweeper (lease) or a person.',
      },
      expressExecutionsFailed: {
        metric: sumOf('Express executions failed or timed out', [
          props.expressStateMachine.metricFailed(),
          props.expressStateMachine.metricTimedOut(),
        ]),
        threshold: 1,
        description: 'Express executions failed or timed out: their operations wait for the sweeper (lease).',
      },
      executionsThrottled: {
        metric: sumOf(
          'Executions throttled',
          machines.map((m) => m.metricThrottled()),
        ),
        threshold: 1,
        description: 'Step Functions throttled executions of either machine: calls stall until the sweeper resumes them.',
      },
      operationsResumed: {
        metric: resumed,
        threshold: 1,
        description: 'The sweeper resumed operations whose execution was lost or stalled past its lease.',
      },
      apiServerErrors: {
        metric: props.api.metricServerError({ statistic: 'Sum', period: PERIOD }),
        threshold: 1,
        description: 'The HTTP API answered 5xx: the API Lambda failed or did not answer within 30 s.',
      },
      apiLatency: {
        metric: props.api.metricLatency({ statistic: 'p99', period: PERIOD }),
        threshold: 26_000,
        periods: [3, 2],
        description: 'p99 API latency above 26 s, past the longest long-poll (25 s): requests are running into the 30 s timeout.',
      },
      functionErrors: {
        metric: sumOf(
          'Function errors',
          functions.map(([, f]) => f.metricErrors({ period: PERIOD })),
        ),
        threshold: 5,
        description:
          'Lambda errors in any function of this runner (5 or more in 5 minutes: a step that finds its operation moved fails by design, rarely).',
      },
      functionThrottles: {
        metric: sumOf(
          'Function throttles',
          functions.map(([, f]) => f.metricThrottles({ period: PERIOD })),
        ),
        threshold: 1,
        description: 'Lambda throttled a function of this runner (account or reserved concurrency).',
      },
      tableReadThrottles: {
        metric: sumOf('Table read throttles', throttleEvents('Read')),
        threshold: 1,
        description: 'DynamoDB throttled reads of a runner table.',
      },
      tableWriteThrottles: {
        metric: sumOf('Table write throttles', throttleEvents('Write')),
        threshold: 1,
        description: 'DynamoDB throttled writes to a runner table.',
      },
      sweeperErrors: {
        metric: (props.functions.Sweeper as lambda.IFunction).metricErrors({ period: PERIOD }),
        threshold: 1,
        description: 'The sweeper failed: lost executions are not resumed while it fails.',
      },
      unknownOutcomes: {
        metric: runner('SUM', WATCHED_METRICS.unknownOutcomes, 'Unknown outcomes'),
        threshold: 1,
        description: 'Attempts whose effect is unknown (reconciled by the tool, or left to a person).',
      },
      reviewsOpen: {
        metric: runner('MAX', WATCHED_METRICS.reviewsOpen, 'Reviews open'),
        threshold: 1,
        description: 'Operations wait for a reviewer to settle them (GET /v1/reviews?status=open).',
      },
      notificationFailures: {
        metric: runner('SUM', WATCHED_METRICS.notificationFailures, 'Notification failures'),
        threshold: 1,
        description: 'Approval or review notifications that could not be delivered: approvers may not know a call waits.',
      },
      sweeperStopped: {
        metric: (props.functions.Sweeper as lambda.IFunction).metricInvocations({ statistic: 'Sum', period: PERIOD }),
        threshold: 1,
        periods: [2, 2],
        below: true,
        // No datapoint is the failure watched for: a schedule that stopped invokes nothing at all.
        missingBreaches: true,
        description: 'The sweeper has not run for 10 minutes (its schedule runs it every minute): lost executions are not resumed.',
      },
      operationBacklogAge: {
        metric: runner('MAX', WATCHED_METRICS.operationBacklogAge, 'Operation backlog age (s)'),
        threshold: 600,
        periods: [2, 2],
        description: 'An operation past its lease has waited more than 10 minutes to be resumed: the sweeper falls behind or fails on it.',
      },
      stepFunctionsApiThrottled: {
        metric: sumOf(
          'Step Functions API calls throttled',
          STATES_APIS.map(
            (api) =>
              new cloudwatch.Metric({
                namespace: 'AWS/States',
                metricName: 'ThrottledEvents',
                dimensionsMap: { APIName: api },
                statistic: 'Sum',
                period: PERIOD,
              }),
          ),
        ),
        threshold: 1,
        description:
          'Step Functions throttled the runner’s API calls (StartExecution, SendTaskSuccess…): calls stall until retried or resumed.',
      },
    };
    const action = new actions.SnsAction(props.alarmTopic);
    this.alarms = Object.fromEntries(
      Object.entries(specs).map(([key, spec]) => {
        const [evaluationPeriods, datapointsToAlarm] = spec.periods ?? [1, 1];
        const alarm = new cloudwatch.Alarm(this, key[0].toUpperCase() + key.slice(1), {
          metric: spec.metric,
          threshold: spec.threshold,
          evaluationPeriods,
          datapointsToAlarm,
          comparisonOperator: spec.below
            ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
            : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: spec.missingBreaches ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
          alarmDescription: spec.description,
        });
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
        return [key, alarm];
      }),
    ) as Record<RunnerAlarm, cloudwatch.Alarm>;

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
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms), width: 24, height: 4 })],
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
