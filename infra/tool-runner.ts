import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ArnFormat, Aws, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct, type IConstruct } from 'constructs';
import { TABLE_ENV, TABLES, type TableLayout } from '../functions/adapters/tables';
import { MAX_APPROVAL_TTL_SECONDS } from '../functions/core/config';
import {
  ASL_PATH,
  EXPRESS_ASL_PATH,
  LIFECYCLE_FUNCTIONS,
  placeholderOf,
  placeholdersIn,
  readDefinition,
  readExpressDefinition,
} from '../statemachines/definition';
import { cdkBundling, runnerFile } from './bundling';
import { API_STAGE_NAME, FUNCTIONS, type FunctionName } from './functions';
import { actionsOf, type Port } from './permissions';

export interface ToolRunnerProps {
  /**
   * The user's tools: `entry` is a module whose default export is an array of tool specs. It is bundled
   * into the Lambdas that run or validate tools (API, Validate, Execute, Reconcile), which also get
   * `environment` (upstream URLs and the like; never secrets, they are visible in the console).
   */
  tools: { entry: string; environment?: Record<string, string> };
  /**
   * An existing secret holding the principals document (`{ principals, approvalSecret, approvalTtlSeconds? }`,
   * see the README). Default: a new secret with no principals and a random `approvalSecret`.
   */
  configSecret?: secrets.ISecret;
  /** Seconds an approval request stays open, written into the new secret. Default 86400; at most 7 days. */
  approvalTtlSeconds?: number;
  /** For the tables, the config secret and the log groups. Default RETAIN: they hold the record. */
  removalPolicy?: RemovalPolicy;
  /** For every log group (Lambdas, state machine, API access logs). Default one month. */
  logRetention?: logs.RetentionDays;
  /** API Gateway stage throttling. Default 200 requests/s, bursts of 400. */
  throttling?: { rateLimit: number; burstLimit: number };
  /** The API's base URL as approvers reach it (approval links). Default: the execute-api URL of the stage. */
  publicBaseUrl?: string;
}

export { API_STAGE_NAME as STAGE_NAME };

/**
 * The tool runner on AWS: DynamoDB tables, the Standard state machine from the ASL file, one Lambda per
 * lifecycle step plus the API and the sweeper, API Gateway, an SNS topic for approvals, an EventBridge
 * Scheduler schedule for the sweeper, and the principals secret. IAM is narrowed to the calls each
 * function makes (`infra/permissions.ts`).
 */
export class ToolRunner extends Construct {
  readonly api: apigw.RestApi;
  /** Base URL of the API stage, without a trailing slash: `${apiUrl}/v1/health`. */
  readonly apiUrl: string;
  readonly stateMachine: sfn.StateMachine;
  /** The Express variant that runs calls needing no person (synchronously when the caller waits). */
  readonly expressStateMachine: sfn.StateMachine;
  readonly tables: Record<TableLayout['id'], dynamodb.Table>;
  readonly approvalTopic: sns.Topic;
  readonly configSecret: secrets.ISecret;
  readonly functions: Record<FunctionName, NodejsFunction>;
  readonly sweepSchedule: scheduler.Schedule;
  private readonly stateMachineName: string;

  constructor(scope: Construct, id: string, props: ToolRunnerProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const logGroup = (logId: string) => new logs.LogGroup(this, logId, { retention, removalPolicy });

    if (props.approvalTtlSeconds !== undefined) {
      if (props.configSecret)
        throw new Error('ToolRunner: approvalTtlSeconds applies to the secret it creates; with configSecret, set it in that document');
      if (
        !Number.isInteger(props.approvalTtlSeconds) ||
        props.approvalTtlSeconds < 1 ||
        props.approvalTtlSeconds > MAX_APPROVAL_TTL_SECONDS
      ) {
        throw new Error(
          `ToolRunner: approvalTtlSeconds must be an integer from 1 to ${MAX_APPROVAL_TTL_SECONDS} (the state machine must outlive the wait)`,
        );
      }
    }

    this.tables = Object.fromEntries(TABLES.map((layout) => [layout.id, this.table(layout, removalPolicy)])) as Record<
      TableLayout['id'],
      dynamodb.Table
    >;
    this.configSecret =
      props.configSecret ??
      new secrets.Secret(this, 'Config', {
        description: 'Tool runner principals, keys and approval settings',
        removalPolicy,
        generateSecretString: {
          secretStringTemplate: JSON.stringify({ principals: [], approvalTtlSeconds: props.approvalTtlSeconds ?? 86400 }),
          generateStringKey: 'approvalSecret',
          excludePunctuation: true,
          passwordLength: 48,
        },
      });
    // The AWS managed key: messages carry signed approval links, and publishers need no key grant.
    this.approvalTopic = new sns.Topic(this, 'ApprovalRequests', {
      displayName: 'Tool runner approval requests',
      enforceSSL: true,
      masterKey: kms.Alias.fromAliasName(this, 'SnsManagedKey', 'alias/aws/sns'),
    });

    // Names, not references, break the cycle state machine → functions → (env, policies) → state machine.
    const stateMachineName = `${stack.stackName}-${this.node.id}-invocation`;
    this.stateMachineName = stateMachineName;
    const stateMachineArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const executionsArn = stack.formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${stateMachineName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const expressStateMachineName = `${stateMachineName}-express`;
    const expressStateMachineArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: expressStateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    const throttling = props.throttling ?? { rateLimit: 200, burstLimit: 400 };
    const accessLogs = logGroup('ApiAccessLogs');
    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: `${stack.stackName}-${this.node.id}-api`,
      description: 'Tool runner HTTP API v1',
      deployOptions: {
        stageName: API_STAGE_NAME,
        tracingEnabled: true,
        throttlingRateLimit: throttling.rateLimit,
        throttlingBurstLimit: throttling.burstLimit,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
        // Errors only, and never request or response bodies: they carry keys, arguments and approval links.
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
      },
      // API Gateway writes logs through the account's CloudWatch role; this creates it (one per account and region).
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
    });
    this.apiUrl = `https://${this.api.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/${API_STAGE_NAME}`;

    const environment: Record<string, string> = {
      ...Object.fromEntries(Object.entries(TABLE_ENV).map(([tid, name]) => [name, this.tables[tid as TableLayout['id']].tableName])),
      STATE_MACHINE_ARN: stateMachineArn,
      EXPRESS_STATE_MACHINE_ARN: expressStateMachineArn,
      PUBLIC_BASE_URL: props.publicBaseUrl ?? this.apiUrl,
      CONFIG_SECRET_ARN: this.configSecret.secretArn,
      APPROVAL_TOPIC_ARN: this.approvalTopic.topicArn,
      POWERTOOLS_SERVICE_NAME: 'toolrunner',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
    };
    // Absolute, because esbuild resolves an alias target from the directory it runs in, not from here.
    const toolsEntry = resolve(props.tools.entry);
    if (!existsSync(toolsEntry)) throw new Error(`ToolRunner: tools.entry ${toolsEntry} does not exist`);
    this.functions = Object.fromEntries(
      Object.entries(FUNCTIONS).map(([name, spec]) => {
        const logs = logGroup(`${name}Logs`);
        const role = new iam.Role(this, `${name}Role`, {
          assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
          description: `toolrunner ${name} function`,
        });
        // Instead of the AWS managed basic execution policy (logs:* on every group): its own log group only.
        role.addToPolicy(
          new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logs.logGroupArn] }),
        );
        const fn = new NodejsFunction(this, `${name}Function`, {
          entry: runnerFile(`functions/handlers/${spec.entry}`),
          handler: 'handler',
          runtime: lambda.Runtime.NODEJS_22_X,
          architecture: lambda.Architecture.ARM_64,
          memorySize: spec.memoryMb ?? 256,
          timeout: Duration.seconds(spec.timeoutSeconds),
          tracing: lambda.Tracing.ACTIVE,
          role,
          environment: spec.tools ? { ...props.tools.environment, ...environment } : environment,
          logGroup: logs,
          bundling: cdkBundling(toolsEntry),
        });
        this.grantPorts(fn, spec.tables, spec.ports, { stateMachineArn, expressStateMachineArn, executionsArn });
        return [name, fn];
      }),
    ) as Record<FunctionName, NodejsFunction>;

    this.stateMachine = new sfn.StateMachine(this, 'Invocation', {
      stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(ASL_PATH),
      definitionSubstitutions: this.substitutionsFor(readDefinition()),
      tracingEnabled: true,
      // Execution data stays out of logs: it carries task tokens in AwaitApproval's payload.
      logs: { destination: logGroup('InvocationLogs'), level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    // The ASL invokes unqualified function ARNs; `grantInvoke` would add `<arn>:*` (every version) too.
    const invokes = (text: string) => Object.values(this.substitutionsFor(text));
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: invokes(readDefinition()) }),
    );

    // Calls that need no person: the Express variant, generated from the same definition (statemachines/express.ts).
    this.expressStateMachine = new sfn.StateMachine(this, 'InvocationExpress', {
      stateMachineName: expressStateMachineName,
      stateMachineType: sfn.StateMachineType.EXPRESS,
      definitionBody: sfn.DefinitionBody.fromFile(EXPRESS_ASL_PATH),
      definitionSubstitutions: this.substitutionsFor(readExpressDefinition()),
      tracingEnabled: true,
      logs: { destination: logGroup('InvocationExpressLogs'), level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    this.expressStateMachine.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: invokes(readExpressDefinition()) }),
    );

    // Errors API Gateway answers itself keep the API's error shape: { error: { code, message } }.
    const gatewayErrors: [apigw.ResponseType, string, string, string][] = [
      [apigw.ResponseType.THROTTLED, '429', 'throttled', 'too many requests'],
      [apigw.ResponseType.REQUEST_TOO_LARGE, '413', 'payload_too_large', 'the body is too large'],
      [apigw.ResponseType.DEFAULT_4XX, '400', 'invalid_request', 'the request was refused'],
      [apigw.ResponseType.DEFAULT_5XX, '502', 'internal', 'internal error'],
    ];
    for (const [type, statusCode, code, message] of gatewayErrors) {
      this.api.addGatewayResponse(`Gateway${code}${statusCode}`, {
        type,
        statusCode,
        templates: { 'application/json': JSON.stringify({ error: { code, message } }) },
      });
    }
    this.api.root
      .addResource('v1')
      .addProxy({ defaultIntegration: new apigw.LambdaIntegration(this.functions.Api, { proxy: true }), anyMethod: true });

    this.sweepSchedule = new scheduler.Schedule(this, 'SweepSchedule', {
      description: 'Resumes operations stuck past their lease',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
      target: new targets.LambdaInvoke(this.functions.Sweeper, { retryAttempts: 0 }),
    });

    this.suppressFindingsWithReasons();
  }

  /** The function ARN for each `${...FunctionArn}` placeholder a definition has, and no other. */
  private substitutionsFor(definition: string): Record<string, string> {
    const used = new Set(placeholdersIn(definition));
    return Object.fromEntries(
      LIFECYCLE_FUNCTIONS.filter((n) => used.has(placeholderOf(n))).map((n) => [placeholderOf(n), this.functions[n].functionArn]),
    );
  }

  /** Exactly the actions of the ports a function uses, each on the resources it touches. */
  private grantPorts(
    fn: NodejsFunction,
    tableIds: readonly TableLayout['id'][],
    ports: readonly Port[],
    arns: { stateMachineArn: string; expressStateMachineArn: string; executionsArn: string },
  ): void {
    const dynamo = actionsOf(ports.filter((p) => p === 'store' || p === 'onceGuard'));
    if (dynamo.length) {
      // Queries go to named indexes; each is its own resource, so no `index/*` wildcard.
      const resources = tableIds.flatMap((id) => [
        this.tables[id].tableArn,
        ...(TABLES.find((l) => l.id === id)?.indexes ?? []).map((i) => `${this.tables[id].tableArn}/index/${i.name}`),
      ]);
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: dynamo, resources }));
    }
    const on = (port: Port, resources: string[]) => {
      if (ports.includes(port)) fn.addToRolePolicy(new iam.PolicyStatement({ actions: actionsOf([port]), resources }));
    };
    on('config', [this.configSecret.secretArn]);
    // The API starts either machine; everyone else (the sweeper, a handoff) only the Standard one.
    on(
      'startExecution',
      ports.includes('startSyncExecution') ? [arns.stateMachineArn, arns.expressStateMachineArn] : [arns.stateMachineArn],
    );
    on('startSyncExecution', [arns.expressStateMachineArn]);
    on('stopExecution', [arns.executionsArn]);
    on('taskResponse', [arns.stateMachineArn]);
    on('notify', [this.approvalTopic.topicArn]);
  }

  /** The role aws-scheduler-targets made for the sweep schedule (one per stack, shared by Lambda targets). */
  private sweepScheduleRole(): IConstruct | undefined {
    return Stack.of(this).node.children.find((c) => c.node.id.startsWith('SchedulerRoleForTarget'));
  }

  private table(layout: TableLayout, removalPolicy: RemovalPolicy): dynamodb.Table {
    const attr = (k: { name: string; type: 'S' | 'N' }) => ({
      name: k.name,
      type: k.type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
    });
    const table = new dynamodb.Table(this, `${layout.id[0].toUpperCase()}${layout.id.slice(1)}Table`, {
      partitionKey: attr(layout.partitionKey),
      sortKey: layout.sortKey && attr(layout.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: layout.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy,
    });
    for (const index of layout.indexes ?? []) {
      table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: attr(index.partitionKey),
        sortKey: attr(index.sortKey),
        projectionType: index.projection === 'KEYS_ONLY' ? dynamodb.ProjectionType.KEYS_ONLY : dynamodb.ProjectionType.ALL,
      });
    }
    return table;
  }

  /** cdk-nag findings acknowledged, each on the narrowest construct, each with its reason. */
  private suppressFindingsWithReasons(): void {
    const ack = (scope: IConstruct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });
    const xray =
      'X-Ray (active tracing) has no resource-level permissions: xray:PutTraceSegments and xray:PutTelemetryRecords need Resource "*".';
    for (const fn of Object.values(this.functions)) {
      ack(fn.role!, 'AwsSolutions-IAM5[Resource::*]', xray);
      ack(
        fn,
        'AwsSolutions-L1',
        'Node.js 22 is a supported LTS Lambda runtime; the bundles target it (infra/bundling.ts) and LocalStack runs it. Moving to a newer runtime is a deliberate change, tested first.',
      );
      ack(fn, 'Serverless-LambdaLatestVersion', 'Same as AwsSolutions-L1: Node.js 22 is the chosen, supported runtime.');
      ack(
        fn,
        'Serverless-LambdaDLQ',
        'Invoked synchronously (Step Functions lambda:invoke, API Gateway proxy) where the caller sees and handles failures; the sweeper runs every minute, so a failed sweep is retried by the next one, and DynamoDB holds every state a retry needs.',
      );
    }
    ack(
      this.stateMachine.role,
      'AwsSolutions-IAM5[Resource::*]',
      `${xray} CloudWatch Logs vended log delivery (logs:CreateLogDelivery and friends) has no resource-level permissions either.`,
    );
    ack(
      this.expressStateMachine.role,
      'AwsSolutions-IAM5[Resource::*]',
      `${xray} CloudWatch Logs vended log delivery (logs:CreateLogDelivery and friends) has no resource-level permissions either.`,
    );
    // How cdk-nag prints the executions ARN (infra/tool-runner.ts builds it with formatArn): tokens as <Name>.
    const stack = Stack.of(this);
    const shown = (value: string, token: string) => (Token.isUnresolved(value) ? `<${token}>` : value);
    const executions = `arn:<AWS::Partition>:states:${shown(stack.region, 'AWS::Region')}:${shown(stack.account, 'AWS::AccountId')}:execution:${this.stateMachineName}:*`;
    for (const fn of [this.functions.Api, this.functions.Sweeper]) {
      ack(
        fn.role!,
        `AwsSolutions-IAM5[Resource::${executions}]`,
        'StopExecution acts on an execution, whose name is only known at run time (the operation id); the wildcard is limited to executions of this one state machine.',
      );
    }
    if (this.configSecret instanceof secrets.Secret) {
      ack(
        this.configSecret,
        'AwsSolutions-SMG4',
        'The secret is the principals document (API keys edited by operators) and the approval-link signing key; a rotation Lambda cannot invent keys that agents hold. Rotate by editing the document: the runner re-reads it within 30 s.',
      );
    }
    const schedulerRole = this.sweepScheduleRole();
    if (schedulerRole)
      ack(
        schedulerRole,
        `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.functions.Sweeper.node.defaultChild as lambda.CfnFunction)}.Arn>:*]`,
        'aws-scheduler-targets grants lambda:InvokeFunction on the function and its versions; the schedule invokes the unqualified function.',
      );
    ack(
      this.api,
      'AwsSolutions-APIG2',
      'The API Lambda validates every request with zod, the same schemas that define the API; a greedy proxy resource has no API Gateway models to validate against.',
    );
    ack(
      this.api,
      'AwsSolutions-APIG3',
      "A WAF web ACL is the deployer's choice and cost; the stage has throttling. Attach a web ACL to the stage where required.",
    );
    ack(
      this.api,
      'AwsSolutions-APIG4',
      'Authentication is in the app: bearer keys from the principals secret (agents, approvers, reviewers) and HMAC-signed approval links; IAM or Cognito authorizers do not fit agent API keys.',
    );
    ack(this.api, 'AwsSolutions-COG4', 'Same as AwsSolutions-APIG4: callers are agents with API keys, not Cognito users.');
    ack(
      this.api,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'The account-level role API Gateway writes access and execution logs with; AWS documents this managed policy for it.',
    );
  }
}
