import { fileURLToPath } from 'node:url';
import { ArnFormat, Aws, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { TABLE_ENV, TABLES, type TableLayout } from '../functions/adapters/tables';
import { ASL_PATH, LIFECYCLE_FUNCTIONS, placeholderOf, type LifecycleFunction } from '../statemachines/definition';

export interface ToolRunnerStackProps extends StackProps {
  /** Base URL of the upstreams the demo tools call (the sandbox, deployed separately). */
  sandboxUrl?: string;
}

const HANDLERS: Record<LifecycleFunction | 'Api' | 'Sweeper', { file: string; timeout: Duration; memory?: number }> = {
  Validate: { file: 'validate.ts', timeout: Duration.seconds(30) },
  RequestApproval: { file: 'request-approval.ts', timeout: Duration.seconds(30) },
  ExpireApproval: { file: 'expire-approval.ts', timeout: Duration.seconds(30) },
  // One attempt: the longest tool timeout plus the intent and outcome writes.
  Execute: { file: 'execute.ts', timeout: Duration.minutes(5), memory: 512 },
  Reconcile: { file: 'reconcile.ts', timeout: Duration.minutes(2) },
  Report: { file: 'report.ts', timeout: Duration.seconds(30) },
  Handoff: { file: 'handoff.ts', timeout: Duration.seconds(30) },
  // API Gateway gives up at 29 s; long-polls stop at 25 s.
  Api: { file: 'api.ts', timeout: Duration.seconds(29), memory: 512 },
  Sweeper: { file: 'sweeper.ts', timeout: Duration.minutes(1) },
};

/** Every lifecycle step writes runs, operations and their trace; only these need more. */
const LIFECYCLE_TABLES: TableLayout['id'][] = ['runs', 'operations', 'events'];
const TABLE_ACCESS: Partial<Record<keyof typeof HANDLERS, TableLayout['id'][]>> = {
  Execute: [...LIFECYCLE_TABLES, 'locks'],
  Reconcile: [...LIFECYCLE_TABLES, 'locks'],
  Report: [...LIFECYCLE_TABLES, 'locks'],
  Api: [...LIFECYCLE_TABLES, 'idempotency'],
};

/** The tool runner on AWS: DynamoDB, Step Functions (the ASL file), Lambdas, API Gateway, SNS, Scheduler. */
export class ToolRunnerStack extends Stack {
  constructor(scope: Construct, id: string, props: ToolRunnerStackProps = {}) {
    super(scope, id, props);

    const tables = Object.fromEntries(TABLES.map((layout) => [layout.id, this.table(layout)])) as Record<TableLayout['id'], dynamodb.Table>;

    // The principals document: starts with no principals and a random approval-link secret; operators add keys.
    const config = new secrets.Secret(this, 'Config', {
      description: 'Tool runner principals, keys and approval settings (see README)',
      generateSecretString: { secretStringTemplate: JSON.stringify({ principals: [], approvalTtlSeconds: 86400 }), generateStringKey: 'approvalSecret', excludePunctuation: true, passwordLength: 48 },
    });
    const approvals = new sns.Topic(this, 'ApprovalRequests', { displayName: 'Tool runner approval requests', enforceSSL: true });

    // Names, not references, break the cycle state machine → functions → (env, policies) → state machine.
    const stateMachineName = `${this.stackName}-invocation`;
    const stateMachineArn = this.formatArn({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const api = new apigw.RestApi(this, 'Api', {
      restApiName: `${this.stackName}-api`,
      description: 'Tool runner HTTP API v1',
      deployOptions: { stageName: 'v1stage', tracingEnabled: true, throttlingRateLimit: 200, throttlingBurstLimit: 400 },
      cloudWatchRole: false,
    });
    const publicBaseUrl = `https://${api.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/v1stage`;

    const environment: Record<string, string> = {
      ...Object.fromEntries(Object.entries(TABLE_ENV).map(([tid, name]) => [name, tables[tid as TableLayout['id']].tableName])),
      STATE_MACHINE_ARN: stateMachineArn,
      SANDBOX_URL: props.sandboxUrl ?? 'https://sandbox.invalid',
      PUBLIC_BASE_URL: publicBaseUrl,
      CONFIG_SECRET_ARN: config.secretArn,
      APPROVAL_TOPIC_ARN: approvals.topicArn,
      POWERTOOLS_SERVICE_NAME: 'toolrunner',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
    };
    const fns = Object.fromEntries(
      Object.entries(HANDLERS).map(([name, spec]) => [
        name,
        new NodejsFunction(this, `${name}Function`, {
          entry: fileURLToPath(new URL(`../functions/handlers/${spec.file}`, import.meta.url)),
          handler: 'handler',
          runtime: lambda.Runtime.NODEJS_22_X,
          architecture: lambda.Architecture.ARM_64,
          memorySize: spec.memory ?? 256,
          timeout: spec.timeout,
          tracing: lambda.Tracing.ACTIVE,
          environment,
          logGroup: new logs.LogGroup(this, `${name}Logs`, { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
          bundling: { format: OutputFormat.ESM, minify: true, sourceMap: true, target: 'node22', mainFields: ['module', 'main'], banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
        }),
      ]),
    ) as Record<keyof typeof HANDLERS, NodejsFunction>;

    for (const [name, fn] of Object.entries(fns)) {
      for (const id of TABLE_ACCESS[name as keyof typeof HANDLERS] ?? LIFECYCLE_TABLES) tables[id].grantReadWriteData(fn);
      config.grantRead(fn);
    }
    approvals.grantPublish(fns.RequestApproval);

    const logGroup = new logs.LogGroup(this, 'InvocationLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.DESTROY });
    const machine = new sfn.StateMachine(this, 'Invocation', {
      stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(ASL_PATH),
      definitionSubstitutions: Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), fns[n].functionArn])),
      tracingEnabled: true,
      // Execution data stays out of logs: it carries task tokens in AwaitApproval's payload.
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    for (const name of LIFECYCLE_FUNCTIONS) fns[name].grantInvoke(machine);

    // The API and the sweeper are not invoked by the state machine, so ordinary grants apply.
    for (const fn of [fns.Api, fns.Sweeper]) {
      machine.grantStartExecution(fn);
      machine.grantExecution(fn, 'states:StopExecution', 'states:DescribeExecution');
    }
    machine.grantTaskResponse(fns.Api);
    // RequestApproval runs inside the machine: a grant would reference it and close a cycle, so the
    // statement names the machine by ARN, limited to the two calls that hand a token back.
    fns.RequestApproval.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:SendTaskSuccess', 'states:SendTaskFailure'], resources: [stateMachineArn] }));

    // Errors API Gateway answers itself keep the API's error shape (docs/openapi.json).
    const gatewayErrors: [apigw.ResponseType, string, string, string][] = [
      [apigw.ResponseType.THROTTLED, '429', 'throttled', 'too many requests'],
      [apigw.ResponseType.REQUEST_TOO_LARGE, '413', 'payload_too_large', 'the body is too large'],
      [apigw.ResponseType.DEFAULT_4XX, '400', 'invalid_request', 'the request was refused'],
      [apigw.ResponseType.DEFAULT_5XX, '502', 'internal', 'internal error'],
    ];
    for (const [type, statusCode, code, message] of gatewayErrors) {
      api.addGatewayResponse(`Gateway${code}${statusCode}`, { type, statusCode, templates: { 'application/json': JSON.stringify({ error: { code, message } }) } });
    }
    api.root.addResource('v1').addProxy({ defaultIntegration: new apigw.LambdaIntegration(fns.Api, { proxy: true }), anyMethod: true });

    const schedule = new scheduler.Schedule(this, 'SweepSchedule', {
      description: 'Resumes operations stuck past their lease',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
      target: new targets.LambdaInvoke(fns.Sweeper, { retryAttempts: 0 }),
    });

    new CfnOutput(this, 'ApiUrl', { value: publicBaseUrl });
    new CfnOutput(this, 'StateMachineArn', { value: machine.stateMachineArn });
    new CfnOutput(this, 'ConfigSecretArn', { value: config.secretArn });
    new CfnOutput(this, 'ApprovalTopicArn', { value: approvals.topicArn });
    new CfnOutput(this, 'SweepScheduleName', { value: schedule.scheduleName });
  }

  private table(layout: TableLayout): dynamodb.Table {
    const attr = (k: { name: string; type: 'S' | 'N' }) => ({ name: k.name, type: k.type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER });
    const table = new dynamodb.Table(this, `${layout.id[0].toUpperCase()}${layout.id.slice(1)}Table`, {
      partitionKey: attr(layout.partitionKey),
      sortKey: layout.sortKey && attr(layout.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: layout.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of layout.indexes ?? []) {
      table.addGlobalSecondaryIndex({ indexName: index.name, partitionKey: attr(index.partitionKey), sortKey: attr(index.sortKey), projectionType: dynamodb.ProjectionType.ALL });
    }
    return table;
  }
}
