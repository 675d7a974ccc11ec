import { Annotations, ArnFormat, Duration, Names, RemovalPolicy, SecretValue, Stack, Token, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct, type IConstruct } from 'constructs';
import { TABLE_ENV, TABLES, type TableLayout } from '../functions/adapters/tables';
import { WATCH_SHARDS } from '../functions/adapters/dynamo-watch';
import type { RunnerConfig } from '../functions/core/config';
import {
  ASL_PATH,
  EXPRESS_ASL_PATH,
  LIFECYCLE_FUNCTIONS,
  placeholderOf,
  placeholdersIn,
  readDefinition,
  readExpressDefinition,
} from '../statemachines/definition';
import { BUNDLED_POLICIES_FILE, cdkBundling, runnerFile, toolsEntryFor } from './bundling';
import { environmentSizeErrors } from './environment-size';
import { API_ROUTES, FUNCTIONS, type FunctionName, RUNS_TOOL_CODE } from './functions';
import { type AlarmTier, RunnerMonitoring, type RunnerAlarm } from './monitoring';
import { RunnerOAuth, type ToolRunnerOAuth } from './oauth';
import { actionsOf, type Port } from './permissions';
import { RunnerSigningKey } from './signing-key';
import {
  BASE_NAME_MAX,
  EXPRESS_SUFFIX,
  RESERVED_CONCURRENCY,
  type ResolvedToolRunnerProps,
  resolveToolRunnerProps,
  STANDARD_SUFFIX,
} from './props';

/** The user's tools module and what only the functions that run tools get. */
export interface ToolRunnerTools {
  /** A module whose default export is an array of tool specs (`.ts`, `.mts`, `.js`, `.mjs`). */
  readonly entry: string;
  /**
   * Variables (upstream URLs and the like; never secrets: they are visible in the console) for the functions
   * whose bundles include the tools module: Api, Execute, Reconcile and Report (`tools: true` in
   * `infra/functions.ts`).
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
}

/**
 * One approver's subscription to the approval links topic: the principal's `id` and where its links go,
 * an `email` address or any other SNS subscription (`new SqsSubscription(queue)`, `new UrlSubscription(url)`,
 * from `aws-cdk-lib/aws-sns-subscriptions`). The construct adds the filter policy on `approverId`.
 */
export interface ToolRunnerApprover {
  /** The principal's `id` in the principals document; its links carry it as the `approverId` attribute. */
  readonly id: string;
  /**
   * An email address that receives this approver's links (SNS sends a confirmation first).
   * @default - none: give `subscription` instead
   */
  readonly email?: string;
  /**
   * Any other SNS subscription for this approver's links; its own filter policy is replaced by the one on
   * `approverId`.
   * @default - none: give `email` instead
   */
  readonly subscription?: sns.ITopicSubscription;
}

/** API Gateway throttling of the `$default` stage, applied to every route. */
export interface ToolRunnerThrottling {
  /** Steady requests per second. */
  readonly rateLimit: number;
  /** Requests in a burst. */
  readonly burstLimit: number;
}

/**
 * Lambda reserved concurrency (opt-in, `ToolRunnerConcurrency.RESERVED`): instances kept for the runner's
 * workers, and the API's ceiling. Every figure is carved out of the account's quota, and AWS keeps 100 of it
 * unreserved (all of it below 100): the preset, 652 in all, needs an account with 752 unreserved. The API's
 * longest wait follows from its ceiling: `TOOLRUNNER_MAX_WAIT_SECONDS` = ceiling / the stage's rate limit (at
 * most 25), so callers waiting at the full rate never need more instances than the ceiling.
 */
export interface ToolRunnerConcurrency {
  /** Execute: attempts, including those a person approved. @default 100 */
  readonly execute?: number;
  /** Reconcile: lookups of outcomes a timeout left unknown (they come in bursts, when an upstream falters). @default 50 */
  readonly reconcile?: number;
  /** Sweeper: its parts (`SWEEPER_PARTS`, run each minute in parallel); fewer are throttled, and retried later. @default 2 */
  readonly sweeper?: number;
  /** The API function's ceiling (requests, MCP and console, long polls included). @default 500 */
  readonly api?: number;
}

/**
 * Sweeper invocations that run at once, each a minute, each owning a range of the watch's shards: at most the
 * number of shards, and within the sweeper's default reservation.
 */
export const SWEEPER_PARTS = Math.min(2, WATCH_SHARDS);

/** Presets for the `concurrency` prop. */
export const ToolRunnerConcurrency = {
  /**
   * Execute 100, Reconcile 50, Sweeper 2, Api 500: 652 reserved, for an account whose quota leaves at least 752
   * unreserved (AWS's default quota of 1,000 with at most 248 reserved elsewhere).
   */
  RESERVED: RESERVED_CONCURRENCY,
} as const;

export {
  bundleTargetOf,
  DEFAULT_MAX_WAITING_POLLS,
  DEFAULT_THROTTLING,
  idleWaitsAtMost,
  longestWaitSeconds,
  SHORT_WAIT_WARNING_SECONDS,
} from './props';

/** The props of the `ToolRunner` construct; only `tools` is required, every other prop documents its default. */
export interface ToolRunnerProps {
  /**
   * The user's tools: `entry` is bundled into the Lambdas that run tools or answer about them (Api, Execute,
   * Reconcile, Report), which also get `environment`.
   */
  readonly tools: ToolRunnerTools;
  /**
   * An existing secret holding the principals document (`{ principals, approvalSecret, approvalTtlSeconds? }`,
   * see the README); its `approvalSecret` signs links. You own it: no deploy writes it.
   * @default - a new principals secret, and the signing key in a secret of its own (`signingKey`)
   */
  readonly configSecret?: secrets.ISecret;
  /**
   * Seconds an approval request stays open (not allowed with `configSecret`); 1 to 604800 (7 days). It reaches
   * the functions as a variable and wins over the document's `approvalTtlSeconds`.
   * @default - the document's, else 86400
   */
  readonly approvalTtlSeconds?: number;
  /**
   * The principals, in the principals document's shape (not allowed with `configSecret`). Given, the construct
   * owns the document: every deploy writes it whole, so edits made by hand are overwritten. Without it the
   * operator owns the document: the construct creates it once and no deploy writes it again. A `key` is
   * replaced by its `keySha256` at synth: the template, the cloud assembly and the secret hold hashes only, so
   * a leaked secret authenticates no one (`toolrunner keys hash` converts a document for a secret of your own).
   * Keep the keys themselves out of source control.
   * @default - none: the operator adds them to the secret after deploying
   */
  readonly principals?: readonly RunnerConfig['principals'][number][];
  /**
   * For the tables, the config secret, the blob bucket, the log groups (and a Cognito user pool). `DESTROY`
   * also empties the bucket when the stack is deleted (`autoDeleteObjects`), so `cdk destroy` succeeds.
   * @default RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE (they hold the record; a first deploy that fails and
   * rolls back leaves nothing behind)
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Days the blob store keeps an object (results over 64 KiB, large arguments) before S3 expires it: at
   * least the records' `retentionDays` (config document, default 7), so no record outlives its result.
   * @default 31
   */
  readonly blobRetentionDays?: number;
  /**
   * For every log group (Lambdas, state machines, API access logs).
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * API Gateway throttling of the `$default` stage (every route). With `concurrency`, a higher rate shortens
   * the API's longest wait (its `concurrency.api` ceiling over this rate): raise both together.
   * @default { rateLimit: 50, burstLimit: 100 }
   */
  readonly throttling?: ToolRunnerThrottling;
  /**
   * Reserved concurrency of Execute, Reconcile and the sweeper, and the API's ceiling (see
   * `ToolRunnerConcurrency`; `ToolRunnerConcurrency.RESERVED` is Execute 100, Reconcile 50, Sweeper 2, Api
   * 500). Only for an account whose quota leaves what it reserves plus 100 unreserved: a new account (quota
   * 10) refuses any reservation and the deploy rolls back. Figures left out take the preset's.
   * @default - none reserved: the workers share the account's pool, and `maxWaitingPolls` bounds the API's idle waits
   */
  readonly concurrency?: ToolRunnerConcurrency | false;
  /**
   * How many requests, across every API instance, may wait idle at once for work done elsewhere (an approval,
   * a lock, Execute): counted in one DynamoDB item with leased slots. A request that finds none free is
   * answered 202 at once (the caller polls); a submission running its first attempt in the API itself is
   * working, not waiting, and takes none. Size it from the account's quota (docs/deploy.md).
   * @default 2 without `concurrency`; with it, no bound (the API's ceiling bounds its instances)
   */
  readonly maxWaitingPolls?: number;
  /**
   * The state machines' base name (`<prefix>-invocation`, `<prefix>-invocation-express`), also the metrics
   * namespace (`toolrunner/<prefix>`) and the API's name: set it to the current one before moving the
   * construct to another path or stack, so running executions (pending approvals) keep their machine.
   * Letters, digits, `-` and `_`, at most 61.
   * @default - derived from the stack name and the construct path
   */
  readonly stateMachineNamePrefix?: string;
  /**
   * With `oauth: { cognito: true }`: the user pool domain's prefix. Prefixes are unique per region across AWS.
   * @default - derived from the stack name, the construct path and the account
   */
  readonly cognitoDomainPrefix?: string;
  /**
   * The API's base URL as approvers reach it (approval links), when it is not the API's endpoint (a custom
   * domain, LocalStack).
   * @default - the API's endpoint, `apiUrl`
   */
  readonly publicBaseUrl?: string;
  /**
   * Where the Critical alarms and the composite over them send their state changes (into ALARM and back to
   * OK), so someone is paged. A topic of your own must let `cloudwatch.amazonaws.com` publish (and, if
   * encrypted, use its key: `kms:Decrypt`, `kms:GenerateDataKey*`); the synth warns when neither this nor
   * `alarmEmails` is given (docs/deploy.md, "Alarms and dashboard").
   * @default - a topic the construct creates (`alarmTopic` member), encrypted with a key of its own, TLS only
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Email addresses subscribed to the alarms topic (each confirms the subscription AWS mails it).
   * @default - none
   */
  readonly alarmEmails?: readonly string[];
  /**
   * The start of every alarm's name (`<prefix>-SweeperStopped`…, `<prefix>-Critical`); the alarms topic's
   * policy lets CloudWatch publish for these alarms only.
   * @default - the instance's unique name (as its state machines')
   */
  readonly alarmNamePrefix?: string;
  /**
   * Whether alarms act on their state changes. `false` keeps them on the dashboard and pages nobody (a
   * staging stack).
   * @default true
   */
  readonly actionsEnabled?: boolean;
  /**
   * X-Ray active tracing of every function and both state machines. Lambda then samples by its fixed rule
   * (the first call each second, then 5%), so at low traffic nearly every call is traced: $5 per million
   * traces, as much as half of what the rest of a call costs. Off, a call is traced only where its caller's
   * trace header says sampled; the runner's spans still go to OpenTelemetry wherever
   * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (README, "Tracing").
   * @default false
   */
  readonly xrayTracing?: boolean;
  /**
   * Memory of the API function (MB, 128 to 10240). It answers every request and runs the first attempt of a
   * call whose caller waits, so it is billed while the tool's upstream answers. Lambda gives CPU in proportion
   * to memory (one vCPU at 1,769 MB): a call's own work, about 20 ms of CPU measured here, takes about 140 ms
   * at 256 MB and about 70 ms at 512 MB. At 256 a call that needs no approval costs $11.81 per million at
   * `npm run cost`'s default scenario, DynamoDB storage and recovery included; raise it for quicker answers.
   * @default 256
   */
  readonly apiMemoryMb?: number;
  /**
   * Who receives approval links over SNS: each a subscription of the links topic filtered on its own
   * `approverId`, so a signed link reaches only the approver it is signed for. These are the topic's only
   * subscriptions: its policy refuses every other `sns:Subscribe`. Approvers may instead (or also) have a
   * webhook in the principals document (`notify`), and every approver sees its pending approvals in the console.
   * @default - none: links reach approvers by webhook and the console only
   */
  readonly approvers?: readonly ToolRunnerApprover[];
  /**
   * Makes the API and `/mcp` an OAuth 2.1 resource server beside bearer keys: any OpenID Connect issuer (the
   * config document's `oauth` shape; this wins over the document's), or `{ cognito: true }` for a Cognito user
   * pool with a resource server (`toolrunner/<role>` scopes) and a client-credentials app client. The runner's
   * own check decides (no gateway authorizer), so it behaves as locally. The stack outputs the metadata URL.
   * @default - bearer keys only (unless the principals document has `oauth`)
   */
  readonly oauth?: ToolRunnerOAuth;
  /**
   * A Cedar policy file (docs/policies.md) deployed beside every function's bundle: loaded once per cold start,
   * and winning over the config secret's `policies`, so policies reviewed in code cannot be undone by editing the
   * secret. Alternatively put the text in the secret's `policies`.
   * @default - the secret's `policies`, if any; without policies, roles and tool lists decide
   */
  readonly policiesFile?: string;
  /**
   * The Lambda runtime of every function (a Node.js runtime, 22 or newer); the bundles target its Node.js major.
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime;
  /**
   * Where tool code (`execute`, `reconcile`) runs. `"function"`: in the `Tools` function, invoked synchronously
   * by the function making the attempt (Api, Execute, Reconcile); its role holds nothing of the runner's (no
   * tables, config secret, topics, state machines or bucket), only `toolPolicies` and `grantSecretToTools`, so a
   * compromised tool dependency cannot decide an approval or rewrite a record. `"none"`: tools run inside the
   * runner's functions and hold their privileges; cheaper (one invocation less per attempt, no second function
   * billed while the upstream answers), for tools you trust as much as the runner. Either way the tools
   * module's top level and its schemas and policy functions load in the runner's functions (to validate calls):
   * keep its top level free of side effects.
   * @default "function"
   */
  readonly toolIsolation?: 'function' | 'none';
  /**
   * IAM statements for the role that runs tool code: the `Tools` function's (or, with `toolIsolation: "none"`,
   * those of Api, Execute and Reconcile). For a secret, `grantSecretToTools`.
   * @default - none
   */
  readonly toolPolicies?: readonly iam.PolicyStatement[];
  /**
   * Memory of the `Tools` function (MB, 128 to 10240). Tool code mostly waits on its upstream, and every
   * millisecond of that wait is billed twice (Tools, and the function waiting for it), so the least memory
   * is the default; raise it for tools that compute (Lambda gives CPU in proportion to memory).
   * @default 128
   */
  readonly toolMemoryMb?: number;
}

/**
 * The links topic's own rule: nobody subscribes to it except through CloudFormation, which creates exactly
 * the subscriptions of the `approvers` prop, each with its filter policy. A subscription made by hand would
 * get every approver's links, and a link decides as its approver.
 *
 * Relied on (AWS documentation; not run against AWS from here): CloudFormation makes every resource operation
 * with a forward access session, with or without a stack service role, so the FAS condition keys are set on
 * its `sns:Subscribe` ("Forward access sessions (FAS) requests and permission evaluation", CloudFormation User
 * Guide); `aws:CalledVia` is such a key and supports `cloudformation.amazonaws.com` ("AWS global condition
 * context keys", IAM User Guide); and `ForAllValues:StringNotEquals` holds when the key is absent, so a direct
 * call (no `aws:CalledVia` at all) is denied too. The topic's owner can still change this policy.
 */
function onlyCloudFormationSubscribes(topic: sns.ITopic): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid: 'OnlyTheConstructsApproversSubscribe',
    effect: iam.Effect.DENY,
    principals: [new iam.AnyPrincipal()],
    actions: ['sns:Subscribe'],
    resources: [topic.topicArn],
    conditions: { 'ForAllValues:StringNotEquals': { 'aws:CalledVia': ['cloudformation.amazonaws.com'] } },
  });
}

/**
 * One approver's subscription of the links topic, filtered on its `approverId`, whatever its own filter said.
 * The approver was checked with the props (`infra/props.ts`).
 */
function subscribeApprover(topic: sns.Topic, approver: ToolRunnerApprover): void {
  const filterPolicy = { approverId: sns.SubscriptionFilter.stringFilter({ allowlist: [approver.id] }) };
  const inner = approver.subscription ?? new subscriptions.EmailSubscription(approver.email!);
  const subscription = topic.addSubscription({
    bind: (bound) => ({ ...inner.bind(bound), filterPolicy, filterPolicyWithMessageBody: undefined }),
  });
  Validations.of(subscription).acknowledge({
    id: 'Serverless-SNSRedrivePolicy',
    reason:
      'A dead-letter queue would gather undeliverable approval links, each of which decides as its approver, in one queue others can read. An undelivered link is not lost: the approval stays listed for its approver (GET /v1/approvals, the console) until it expires.',
  });
}

/** The state machines' names and ARNs (names, not references: see `namesOf`), and the metrics namespace. */
interface RunnerNames {
  readonly baseName: string;
  readonly stateMachineName: string;
  readonly expressStateMachineName: string;
  readonly stateMachineArn: string;
  readonly expressStateMachineArn: string;
  readonly executionsArn: string;
  readonly metricsNamespace: string;
}

/**
 * The tables with point-in-time recovery: the record (runs, operations and their trace, which is also the
 * index of a run's operations), and the watch, whose entries are how the sweeper finds the active operations of
 * a restored table (a few hundred bytes a call). Restoring them restores every call's state, result and history.
 */
export const RECOVERABLE_TABLES: readonly TableLayout['id'][] = ['runs', 'operations', 'events', 'watch'];
/** Why the others have none: what they hold is short-lived or rebuilt, and a restored copy would be stale. */
const NOT_RECOVERED = {
  locks: 'it holds leases of seconds to minutes; a restored lock would only block a resource until its lease passed.',
  idempotency:
    "it holds Powertools' record of run creations for an hour; a client retrying after a restore would create its run again, as after that hour.",
} as const;

/**
 * One JSON line per request, never a body or a header value (they carry keys, arguments and approval links).
 * Variables an HTTP API supports; `requestId` first, as API Gateway requires it.
 */
/**
 * The generation template of the principals document the operator owns: fixed (any change to it would make
 * CloudFormation generate the document anew, erasing what operators added), and the same as the template every
 * stack had before the signing key moved out, when neither `principals` nor `approvalTtlSeconds` was given.
 */
const OPERATOR_DOCUMENT_GENERATION = {
  secretStringTemplate: JSON.stringify({ principals: [], approvalTtlSeconds: 86400 }),
  generateStringKey: 'approvalSecret',
  excludePunctuation: true,
  passwordLength: 48,
} as const satisfies secrets.SecretStringGenerator;

const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    ip: '$context.identity.sourceIp',
    requestTime: '$context.requestTime',
    httpMethod: '$context.httpMethod',
    routeKey: '$context.routeKey',
    path: '$context.path',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    responseLatency: '$context.responseLatency',
    integrationLatency: '$context.integrationLatency',
    integrationStatus: '$context.integrationStatus',
    errorMessage: '$context.error.message',
  }),
);

/**
 * The tool runner on AWS: DynamoDB tables, the Standard state machine from the ASL file and its Express
 * variant, one Lambda per lifecycle step plus the API and the sweeper, an API Gateway HTTP API, two SNS
 * topics (approval links for the `approvers` only, link-free notices for anyone), an EventBridge Scheduler
 * schedule for the sweeper, the principals secret, alarms
 * and a dashboard. IAM is narrowed to the calls each function makes (`infra/permissions.ts`). Any number
 * of instances compose in one stack or app: nothing account-wide is created, every name is unique.
 */
export class ToolRunner extends Construct {
  /** The HTTP API (`$default` stage): `/v1/...`, `/mcp` and `/console` to the API Lambda. */
  readonly api: apigw.HttpApi;
  /** The API's endpoint, without a trailing slash: `${apiUrl}/v1/health`, `${apiUrl}/mcp`. */
  readonly apiUrl: string;
  /** The Standard state machine: the lifecycle of every call, and the only one that waits for people. */
  readonly stateMachine: sfn.StateMachine;
  /** The Express variant that runs calls needing no person (synchronously when the caller waits). */
  readonly expressStateMachine: sfn.StateMachine;
  readonly tables: Record<TableLayout['id'], dynamodb.Table>;
  /** The blob store: results over 64 KiB and large arguments, encrypted, TLS only, expiring with `blobRetentionDays`. */
  readonly blobBucket: s3.Bucket;
  /**
   * The approval links topic. Each message carries one approver's signed link and that approver's id in the
   * `approverId` message attribute; its only subscriptions are the `approvers` prop's, each filtered on it.
   */
  readonly approvalTopic: sns.Topic;
  /**
   * Link-free notices anyone may subscribe to (a team channel, an audit queue): approvals requested,
   * decided and expired, and reviews needed. The message attribute `type` names which.
   */
  readonly noticesTopic: sns.Topic;
  readonly configSecret: secrets.ISecret;
  /**
   * The secret holding the key that signs approval links, MCP session ids and console sessions
   * (`{ "approvalSecret": … }`), when the construct created the principals document (none with `configSecret`).
   * Its generation template never changes, so no deploy replaces the key; rotate it by storing a new value.
   */
  readonly signingKey?: secrets.ISecret;
  /** Every function; `Tools` only with `toolIsolation: "function"`. */
  readonly functions: Record<Exclude<FunctionName, 'Tools'>, NodejsFunction> & { readonly Tools?: NodejsFunction };
  /** The functions whose roles tool code runs with: `Tools`, or (without isolation) Api, Execute and Reconcile. */
  readonly toolCodeFunctions: readonly NodejsFunction[];
  /** The first of `sweepSchedules`. */
  readonly sweepSchedule: scheduler.Schedule;
  /** The sweeper's schedules, one a minute per part of the watch (`SWEEPER_PARTS`), running in parallel. */
  readonly sweepSchedules: readonly scheduler.Schedule[];
  /** The CloudWatch namespace of this instance's own metrics (`ToolCalls`, `UnknownOutcomes`…): `toolrunner/<name>`. */
  readonly metricsNamespace: string;
  /** This instance's alarms, by what they watch (README, "Alarms and dashboard"). */
  readonly alarms: Record<RunnerAlarm, cloudwatch.Alarm>;
  /** This instance's dashboard: API, executions, functions, tables and the runner's own metrics. */
  readonly dashboard: cloudwatch.Dashboard;
  /** Each alarm's tier: Critical alarms page (the alarms topic), Warning alarms are on the dashboard. */
  readonly alarmTiers: Record<RunnerAlarm, AlarmTier>;
  /** In ALARM while any Critical alarm is; pages through the alarms topic. */
  readonly criticalAlarm: cloudwatch.CompositeAlarm;
  /** Where the Critical alarms and the composite send their state changes: the `alarmTopic` prop, or the topic created for it. */
  readonly alarmTopic: sns.ITopic;
  /** The key of the alarms topic the construct created (none with an `alarmTopic` of your own). */
  readonly alarmTopicKey?: kms.Key;
  /** The OAuth issuer's wiring (and with `{ cognito: true }` the user pool and its app clients, one per role), when `oauth` is set. */
  readonly oauth?: RunnerOAuth;
  private readonly stateMachineName: string;
  private readonly xrayTracing: boolean;
  private readonly sweepScheduleRole: iam.Role;
  private readonly apiRoutes: apigw.HttpRoute[];
  private readonly signingKeySeed?: RunnerSigningKey;

  constructor(scope: Construct, id: string, props: ToolRunnerProps) {
    // Every prop checked, and its default filled in, before the construct joins the user's tree: a bad prop
    // throws here and leaves nothing half-built behind.
    const resolved = resolveToolRunnerProps(props);
    super(scope, id);
    for (const warning of resolved.warnings) Annotations.of(this).addWarningV2(warning.id, warning.message);
    this.xrayTracing = resolved.xrayTracing;
    // The order below is the order resources appear in the template: keep it, or the template changes.
    this.tables = this.buildTables(resolved.removalPolicy);
    this.blobBucket = this.buildBlobBucket(resolved);
    this.configSecret = resolved.configSecret ?? this.buildConfigSecret(resolved);
    const signingKey = resolved.configSecret
      ? undefined
      : new RunnerSigningKey(this, 'SigningKey', {
          configSecret: this.configSecret,
          removalPolicy: resolved.removalPolicy,
          runtime: resolved.runtime,
          bundleTarget: resolved.bundleTarget,
          logRetention: resolved.logRetention,
        });
    this.signingKey = signingKey?.secret;
    this.signingKeySeed = signingKey;
    const topics = this.buildApproverTopics(resolved.approvers);
    this.approvalTopic = topics.approvalTopic;
    this.noticesTopic = topics.noticesTopic;
    const names = this.namesOf(resolved);
    this.stateMachineName = names.stateMachineName;
    this.metricsNamespace = names.metricsNamespace;
    this.api = this.buildHttpApi(names.baseName);
    this.apiUrl = this.api.apiEndpoint;
    const built = this.buildFunctions(resolved, names);
    this.functions = built.functions;
    this.toolCodeFunctions = resolved.isolated ? [built.functions.Tools!] : RUNS_TOOL_CODE.map((n) => built.functions[n]);
    for (const statement of resolved.toolPolicies) for (const fn of this.toolCodeFunctions) fn.addToRolePolicy(statement);
    const machines = this.buildStateMachines(resolved, names);
    this.stateMachine = machines.standard;
    this.expressStateMachine = machines.express;
    this.apiRoutes = this.buildApiStage(resolved);
    const sweep = this.buildSweepSchedules();
    this.sweepScheduleRole = sweep.role;
    this.sweepSchedules = sweep.schedules;
    this.sweepSchedule = this.sweepSchedules[0];
    const alarmNamePrefix = resolved.alarmNamePrefix ?? names.baseName;
    const alarmTopic = this.buildAlarmTopic(resolved, alarmNamePrefix);
    this.alarmTopic = alarmTopic.topic;
    this.alarmTopicKey = alarmTopic.key;
    const monitoring = new RunnerMonitoring(this, 'Monitoring', {
      api: this.api,
      stateMachine: this.stateMachine,
      expressStateMachine: this.expressStateMachine,
      functions: this.functions,
      tables: this.tables,
      sweeperLogs: built.logs.Sweeper,
      metricsNamespace: this.metricsNamespace,
      alarmTopic: this.alarmTopic,
      deliveryTopics: [this.approvalTopic, this.noticesTopic, this.alarmTopic],
      alarmNamePrefix,
      actionsEnabled: resolved.actionsEnabled,
      apiLongestWaitSeconds: resolved.longestWait,
    });
    this.alarms = monitoring.alarms;
    this.alarmTiers = monitoring.tiers;
    this.criticalAlarm = monitoring.critical;
    this.dashboard = monitoring.dashboard;
    if (resolved.oauth)
      this.oauth = new RunnerOAuth(this, 'OAuth', {
        oauth: resolved.oauth,
        apiUrl: this.apiUrl,
        api: this.functions.Api,
        removalPolicy: resolved.removalPolicy,
        domainPrefix: resolved.cognitoDomainPrefix,
      });
    // Checked at synth, after every variable is added (the OAuth issuer's too): a deploy would fail on it. It
    // needs the built functions (their tokens resolve only then), so it is the one check not made up front.
    for (const [name, fn] of Object.entries(this.functions))
      fn.node.addValidation({ validate: () => environmentSizeErrors(name, fn.node.defaultChild as lambda.CfnFunction) });

    this.suppressFindingsWithReasons();
  }

  /** A log group of the runner's, with the retention and removal policy of the props. */
  private logGroup(resolved: ResolvedToolRunnerProps, logId: string): logs.LogGroup {
    return new logs.LogGroup(this, logId, { retention: resolved.logRetention, removalPolicy: resolved.removalPolicy });
  }

  /** One table per layout of `functions/adapters/tables.ts`. */
  private buildTables(removalPolicy: RemovalPolicy): Record<TableLayout['id'], dynamodb.Table> {
    return Object.fromEntries(TABLES.map((layout) => [layout.id, this.table(layout, removalPolicy)])) as Record<
      TableLayout['id'],
      dynamodb.Table
    >;
  }

  private buildBlobBucket(resolved: ResolvedToolRunnerProps): s3.Bucket {
    return new s3.Bucket(this, 'Blobs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: resolved.removalPolicy,
      // An emptied bucket only when the stack's data goes with it: CloudFormation cannot delete one with objects.
      autoDeleteObjects: resolved.removalPolicy === RemovalPolicy.DESTROY,
      lifecycleRules: [{ expiration: Duration.days(resolved.blobRetentionDays), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
    });
  }

  /**
   * The principals document when the user brings none. With the `principals` prop the construct owns it and
   * writes it whole (`SecretString`: a deploy overwrites hand edits). Without, the operator owns it: a generation
   * template that never changes, so no deploy writes it again (CloudFormation generates a new value only when
   * `GenerateSecretString` changes:
   * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-secretsmanager-secret.html).
   * That template is the one stacks deployed before the signing key had without the two props, so their
   * documents, hand edits and all, are not touched by the update; its generated `approvalSecret` only seeds the
   * signing key.
   */
  private buildConfigSecret(resolved: ResolvedToolRunnerProps): secrets.Secret {
    const description = 'Tool runner principals, keys and approval settings';
    if (resolved.ownedPrincipals)
      return new secrets.Secret(this, 'Config', {
        description,
        removalPolicy: resolved.removalPolicy,
        // Hashes only (infra/props.ts): nothing in it authenticates anyone.
        secretStringValue: SecretValue.unsafePlainText(JSON.stringify(resolved.ownedPrincipals)),
      });
    return new secrets.Secret(this, 'Config', {
      description,
      removalPolicy: resolved.removalPolicy,
      generateSecretString: { ...OPERATOR_DOCUMENT_GENERATION },
    });
  }

  /** The approval links topic with its approvers' subscriptions, and the link-free notices topic. */
  private buildApproverTopics(approvers: readonly ToolRunnerApprover[]): { approvalTopic: sns.Topic; noticesTopic: sns.Topic } {
    // The AWS managed key: publishers need no key grant.
    const snsKey = kms.Alias.fromAliasName(this, 'SnsManagedKey', 'alias/aws/sns');
    // A new construct id, not the earlier single topic's: replacing that topic drops every subscription made to
    // it by hand, each of which would receive every approver's links.
    const approvalTopic = new sns.Topic(this, 'ApprovalLinks', {
      displayName: 'Tool runner approval links',
      enforceSSL: true,
      masterKey: snsKey,
    });
    approvalTopic.addToResourcePolicy(onlyCloudFormationSubscribes(approvalTopic));
    for (const approver of approvers) subscribeApprover(approvalTopic, approver);
    const noticesTopic = new sns.Topic(this, 'Notices', {
      displayName: 'Tool runner notices',
      enforceSSL: true,
      masterKey: snsKey,
    });
    return { approvalTopic, noticesTopic };
  }

  /**
   * The state machines' names and ARNs, and the metrics namespace. Names, not references, break the cycle state
   * machine → functions → (env, policies) → state machine. Unique per stack name and construct path, and within
   * Step Functions' 80 characters with either suffix.
   */
  private namesOf(resolved: ResolvedToolRunnerProps): RunnerNames {
    const stack = Stack.of(this);
    const baseName =
      resolved.stateMachineNamePrefix ??
      Names.uniqueResourceName(this, { maxLength: BASE_NAME_MAX, separator: '-', allowedSpecialCharacters: '-_' });
    const stateMachineName = `${baseName}${STANDARD_SUFFIX}`;
    const expressStateMachineName = `${stateMachineName}${EXPRESS_SUFFIX}`;
    const arnOf = (resource: string, resourceName: string) =>
      stack.formatArn({ service: 'states', resource, resourceName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    return {
      baseName,
      stateMachineName,
      expressStateMachineName,
      stateMachineArn: arnOf('stateMachine', stateMachineName),
      executionsArn: arnOf('execution', `${stateMachineName}:*`),
      expressStateMachineArn: arnOf('stateMachine', expressStateMachineName),
      metricsNamespace: `toolrunner/${baseName}`,
    };
  }

  /**
   * An HTTP API, not a REST API: $1 per million requests instead of $3.50, and nothing the runner needs is
   * missing (it authenticates, validates and shapes its own errors). What it cannot do: X-Ray tracing, and
   * rewriting the bodies of the errors it answers itself (README, "Deploying").
   */
  private buildHttpApi(baseName: string): apigw.HttpApi {
    return new apigw.HttpApi(this, 'Api', {
      // Not required to be unique, but two instances are told apart in the console by it.
      apiName: `${baseName}-api`,
      description: 'Tool runner HTTP API v1, MCP server and console',
      createDefaultStage: false,
    });
  }

  /** The variables every function but `Tools` gets: where the tables, machines, secret, topics and bucket are. */
  private runnerEnvironment(resolved: ResolvedToolRunnerProps, names: RunnerNames): Record<string, string> {
    return {
      ...Object.fromEntries(Object.entries(TABLE_ENV).map(([tid, name]) => [name, this.tables[tid as TableLayout['id']].tableName])),
      STATE_MACHINE_ARN: names.stateMachineArn,
      EXPRESS_STATE_MACHINE_ARN: names.expressStateMachineArn,
      PUBLIC_BASE_URL: resolved.publicBaseUrl ?? this.apiUrl,
      CONFIG_SECRET_ARN: this.configSecret.secretArn,
      ...(this.signingKey ? { SIGNING_KEY_SECRET_ARN: this.signingKey.secretArn } : {}),
      ...(resolved.approvalTtlSeconds !== undefined ? { TOOLRUNNER_APPROVAL_TTL_SECONDS: String(resolved.approvalTtlSeconds) } : {}),
      APPROVAL_TOPIC_ARN: this.approvalTopic.topicArn,
      NOTICES_TOPIC_ARN: this.noticesTopic.topicArn,
      BLOB_BUCKET: this.blobBucket.bucketName,
      POWERTOOLS_SERVICE_NAME: 'toolrunner',
      // Each instance's metrics apart, so its alarms count its own (functions/adapters/metrics.ts reads it).
      POWERTOOLS_METRICS_NAMESPACE: this.metricsNamespace,
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
      ...(resolved.policiesFile ? { TOOLRUNNER_POLICIES_FILE: BUNDLED_POLICIES_FILE } : {}),
    };
  }

  /** Every function of `infra/functions.ts` (`Tools` only with isolation), each with its log group, role and grants. */
  private buildFunctions(
    resolved: ResolvedToolRunnerProps,
    names: RunnerNames,
  ): { functions: ToolRunner['functions']; logs: Record<FunctionName, logs.LogGroup> } {
    const { isolated, reserved } = resolved;
    const environment = this.runnerEnvironment(resolved, names);
    // Tools first: the functions that invoke it need its name and ARN.
    const deployed = (Object.entries(FUNCTIONS) as [FunctionName, (typeof FUNCTIONS)[FunctionName]][])
      .filter(([name]) => name !== 'Tools' || isolated)
      .sort(([a], [b]) => Number(b === 'Tools') - Number(a === 'Tools'));
    const toolsEnvironment = {
      ...resolved.toolsEnvironment,
      POWERTOOLS_SERVICE_NAME: 'toolrunner-tools',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
    };
    const reservedFor = (name: FunctionName) =>
      name === 'Execute'
        ? reserved?.execute
        : name === 'Reconcile'
          ? reserved?.reconcile
          : name === 'Sweeper'
            ? reserved?.sweeper
            : name === 'Api'
              ? reserved?.api
              : undefined;
    const functionLogs = {} as Record<FunctionName, logs.LogGroup>;
    const made = {} as Record<FunctionName, NodejsFunction>;
    for (const [name, spec] of deployed) {
      const ports = isolated ? spec.ports : spec.ports.filter((p) => p !== 'invokeTools');
      const invokesTools = ports.includes('invokeTools');
      const logGroup = this.logGroup(resolved, `${name}Logs`);
      functionLogs[name] = logGroup;
      const role = new iam.Role(this, `${name}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `toolrunner ${name} function`,
      });
      // Instead of the AWS managed basic execution policy (logs:* on every group): its own log group only.
      role.addToPolicy(
        new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logGroup.logGroupArn] }),
      );
      const fn = new NodejsFunction(this, `${name}Function`, {
        entry: runnerFile(`functions/handlers/${spec.entry}`),
        handler: 'handler',
        runtime: resolved.runtime,
        architecture: lambda.Architecture.ARM_64,
        memorySize: name === 'Api' ? resolved.apiMemoryMb : name === 'Tools' ? resolved.toolMemoryMb : (spec.memoryMb ?? 256),
        timeout: Duration.seconds(spec.timeoutSeconds),
        tracing: resolved.xrayTracing ? lambda.Tracing.ACTIVE : lambda.Tracing.PASS_THROUGH,
        role,
        environment:
          name === 'Tools'
            ? toolsEnvironment
            : spec.tools
              ? {
                  // Only a function that loads the tools module sees its variables: with isolation, Tools alone.
                  ...(isolated ? {} : resolved.toolsEnvironment),
                  ...environment,
                  ...(invokesTools ? { TOOLS_FUNCTION_NAME: made.Tools.currentVersion.functionArn } : {}),
                  ...(name === 'Api' ? { TOOLRUNNER_MAX_WAIT_SECONDS: String(resolved.longestWait) } : {}),
                  ...(name === 'Api' && resolved.maxWaitingPolls !== undefined
                    ? { TOOLRUNNER_MAX_WAITING_POLLS: String(resolved.maxWaitingPolls) }
                    : {}),
                }
              : environment,
        logGroup,
        // One JSON record per line (Logs Insights parses them); Powertools' own records pass through as they are.
        loggingFormat: lambda.LoggingFormat.JSON,
        // Api and Tools, invoked for every call: no platform.start/report records per invocation (about $0.1
        // per million calls each in ingestion); Lambda's Duration, Errors and Throttles metrics and the spans
        // tell their time. Their own log lines still pass, as do Lambda's warnings and errors (a timeout).
        ...(name === 'Tools' || name === 'Api' ? { systemLogLevelV2: lambda.SystemLogLevel.WARN } : {}),
        bundling: cdkBundling(toolsEntryFor(name, resolved.toolsEntry, isolated), resolved.bundleTarget, resolved.policiesFile),
        reservedConcurrentExecutions: reservedFor(name),
        // Callers invoke the version of Tools deployed with them (TOOLS_FUNCTION_NAME below): CloudFormation
        // updates Tools before them, and an older caller still running must not meet a newer tools module.
        // Old versions are kept, as an invocation of an old caller may outlast the deploy's cleanup.
        ...(name === 'Tools' ? { currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN } } : {}),
      });
      this.grantPorts(fn, spec.tables, ports, {
        stateMachineArn: names.stateMachineArn,
        expressStateMachineArn: names.expressStateMachineArn,
        executionsArn: names.executionsArn,
        toolsArn: invokesTools ? made.Tools.currentVersion.functionArn : undefined,
      });
      made[name] = fn;
    }
    return { functions: made as ToolRunner['functions'], logs: functionLogs };
  }

  /** The Standard state machine from the ASL file, and its Express variant for calls that need no person. */
  private buildStateMachines(
    resolved: ResolvedToolRunnerProps,
    names: RunnerNames,
  ): { standard: sfn.StateMachine; express: sfn.StateMachine } {
    // Under /aws/vendedlogs/: Step Functions then delivers logs without adding the group to the account's
    // CloudWatch Logs resource policy, which has a size limit that many state machines would fill.
    // A state machine's log group has a fixed name (Step Functions wants /aws/vendedlogs/states/): retained, it
    // would make `cdk deploy` fail after `cdk destroy` under the same stack name. Deleted with the stack instead.
    const vendedLogGroup = (logId: string, machineName: string) =>
      new logs.LogGroup(this, logId, {
        logGroupName: `/aws/vendedlogs/states/${machineName}`,
        retention: resolved.logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    const standard = new sfn.StateMachine(this, 'Invocation', {
      stateMachineName: names.stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(ASL_PATH),
      definitionSubstitutions: this.substitutionsFor(readDefinition()),
      tracingEnabled: resolved.xrayTracing,
      // Execution data stays out of logs: it carries task tokens in AwaitApproval's payload.
      logs: { destination: vendedLogGroup('InvocationLogs', names.stateMachineName), level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    // The ASL invokes unqualified function ARNs; `grantInvoke` would add `<arn>:*` (every version) too.
    const invokes = (text: string) => Object.values(this.substitutionsFor(text));
    standard.addToRolePolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: invokes(readDefinition()) }));

    // Calls that need no person: the Express variant, generated from the same definition (statemachines/express.ts).
    const express = new sfn.StateMachine(this, 'InvocationExpress', {
      stateMachineName: names.expressStateMachineName,
      stateMachineType: sfn.StateMachineType.EXPRESS,
      definitionBody: sfn.DefinitionBody.fromFile(EXPRESS_ASL_PATH),
      definitionSubstitutions: this.substitutionsFor(readExpressDefinition()),
      tracingEnabled: resolved.xrayTracing,
      // ERROR, not ALL: ALL writes 13 events (about 4 KB) for a call that succeeds, more than half of what the
      // rest of its logs cost; the record in DynamoDB and its trace already tell every step of such a call.
      logs: {
        destination: vendedLogGroup('InvocationExpressLogs', names.expressStateMachineName),
        level: sfn.LogLevel.ERROR,
        includeExecutionData: false,
      },
    });
    express.addToRolePolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: invokes(readExpressDefinition()) }));
    return { standard, express };
  }

  /** The `$default` stage (throttled, access-logged) and the API's routes, all to the Api function. */
  private buildApiStage(resolved: ResolvedToolRunnerProps): apigw.HttpRoute[] {
    const accessLogs = this.logGroup(resolved, 'ApiAccessLogs');
    new apigw.HttpStage(this, 'ApiStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: resolved.throttling.rateLimit, burstLimit: resolved.throttling.burstLimit },
      accessLogSettings: { destination: new apigw.LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.functions.Api, {
      payloadFormatVersion: apigw.PayloadFormatVersion.VERSION_2_0,
    });
    return API_ROUTES.flatMap((routeKey) => {
      const [method, path] = routeKey.split(' ');
      return this.api.addRoutes({ path, methods: [method as apigw.HttpMethod], integration });
    });
  }

  /** The sweeper's schedules, one a minute per part of the watch, and the role they invoke it with. */
  private buildSweepSchedules(): { role: iam.Role; schedules: scheduler.Schedule[] } {
    // Its own role: aws-scheduler-targets would otherwise share one role per stack between every instance.
    const role = new iam.Role(this, 'SweepScheduleRole', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'toolrunner sweep schedule',
    });
    // One schedule per part of the watch, so the parts run in parallel, each on its own range of shards
    // (functions/handlers/sweeper.ts); part 0 keeps the construct id of the single schedule before it.
    const schedules = Array.from(
      { length: SWEEPER_PARTS },
      (_, part) =>
        new scheduler.Schedule(this, part === 0 ? 'SweepSchedule' : `SweepSchedule${part}`, {
          description: `Resumes operations stuck past their lease (part ${part + 1} of ${SWEEPER_PARTS})`,
          schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
          target: new targets.LambdaInvoke(this.functions.Sweeper, {
            retryAttempts: 0,
            role,
            input: scheduler.ScheduleTargetInput.fromObject({ part, parts: SWEEPER_PARTS }),
          }),
        }),
    );
    return { role, schedules };
  }

  /** Where the alarms page: the `alarmTopic` prop, or a topic of the construct's own; `alarmEmails` subscribed to it. */
  private buildAlarmTopic(resolved: ResolvedToolRunnerProps, alarmNamePrefix: string): { topic: sns.ITopic; key?: kms.Key } {
    const created = resolved.alarmTopic ? undefined : this.alarmsTopic(alarmNamePrefix);
    const topic = resolved.alarmTopic ?? created!.topic;
    for (const email of resolved.alarmEmails) topic.addSubscription(new subscriptions.EmailSubscription(email));
    return { topic, key: created?.key };
  }

  /**
   * The alarms topic: encrypted with a key of its own, since CloudWatch cannot use an AWS managed key (such as
   * `alias/aws/sns`, whose policy nobody can change) and its alarms' messages would be dropped. CloudWatch
   * publishes as `cloudwatch.amazonaws.com`, for this account's alarms of this instance only.
   */
  private alarmsTopic(alarmNamePrefix: string): { topic: sns.Topic; key: kms.Key } {
    const stack = Stack.of(this);
    const cloudwatchService = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
    const key = new kms.Key(this, 'AlarmsKey', {
      description: 'Tool runner alarms topic',
      enableKeyRotation: true,
      // It encrypts messages in flight only: nothing is lost with it.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [cloudwatchService],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    const topic = new sns.Topic(this, 'Alarms', { displayName: 'Tool runner alarms', enforceSSL: true, masterKey: key });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [cloudwatchService],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': stack.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: `${alarmNamePrefix}-*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    return { topic, key };
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
    arns: { stateMachineArn: string; expressStateMachineArn: string; executionsArn: string; toolsArn?: string },
  ): void {
    const dynamo = actionsOf(ports.filter((p) => p === 'store' || p === 'onceGuard'));
    if (dynamo.length) {
      // Queries go to named indexes; each is its own resource, so no `index/*` wildcard.
      const resources = tableIds.flatMap((id) => [
        this.tables[id].tableArn,
        ...(TABLES.find((l) => l.id === id)?.indexes ?? []).map((i) => `${this.tables[id].tableArn}/index/${i.name}`),
      ]);
      // Nothing the runner records is ever deleted: the store deletes only a released lock (no transaction of
      // it deletes), and Powertools idempotency only its own records. DeleteItem goes to those tables alone.
      const deletes = tableIds.filter((id) => id === 'locks' || (id === 'idempotency' && ports.includes('onceGuard')));
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: dynamo.filter((a) => a !== 'dynamodb:DeleteItem'), resources }));
      if (dynamo.includes('dynamodb:DeleteItem') && deletes.length)
        fn.addToRolePolicy(
          new iam.PolicyStatement({ actions: ['dynamodb:DeleteItem'], resources: deletes.map((id) => this.tables[id].tableArn) }),
        );
    }
    const on = (port: Port, resources: string[]) => {
      if (ports.includes(port)) fn.addToRolePolicy(new iam.PolicyStatement({ actions: actionsOf([port]), resources }));
    };
    on('config', this.signingKey ? [this.configSecret.secretArn, this.signingKey.secretArn] : [this.configSecret.secretArn]);
    // Nothing signs or verifies before the key holds the one the links in flight were signed with.
    if (ports.includes('config') && this.signingKeySeed) fn.node.addDependency(this.signingKeySeed.seeded);
    // The API starts either machine; everyone else (the sweeper, a handoff) only the Standard one.
    on(
      'startExecution',
      ports.includes('startSyncExecution') ? [arns.stateMachineArn, arns.expressStateMachineArn] : [arns.stateMachineArn],
    );
    on('startSyncExecution', [arns.expressStateMachineArn]);
    on('stopExecution', [arns.executionsArn]);
    // SendTaskSuccess/Failure have no resource-level permissions (the Service Authorization Reference lists no
    // resource type): IAM evaluates them against "*", so a statement naming the state machine would grant nothing.
    on('taskResponse', ['*']);
    on('notifyLinks', [this.approvalTopic.topicArn]);
    on('notifyNotices', [this.noticesTopic.topicArn]);
    on('blobs', [this.blobBucket.arnForObjects('*')]);
    // The version the caller invokes only, not `<arn>:*` (every version) as `grantInvoke` would add.
    if (arns.toolsArn) on('invokeTools', [arns.toolsArn]);
  }

  /**
   * Lets tool code read `secret` (an upstream's API key): the `Tools` function's role, or without isolation
   * the roles of the functions that run tool code. The runner's own config secret is never granted here.
   */
  grantSecretToTools(secret: secrets.ISecret): void {
    if (secret === this.configSecret) throw new Error("ToolRunner: the runner's config secret is not for tools (it signs approvals)");
    for (const fn of this.toolCodeFunctions) secret.grantRead(fn);
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
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: RECOVERABLE_TABLES.includes(layout.id) },
      timeToLiveAttribute: layout.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy,
    });
    if (!RECOVERABLE_TABLES.includes(layout.id))
      Validations.of(table).acknowledge({
        id: 'AwsSolutions-DDB3',
        reason: `No point-in-time recovery on the ${layout.id} table: ${NOT_RECOVERED[layout.id as keyof typeof NOT_RECOVERED]} Recovery would cost as much per GB as its storage for nothing a restore could use.`,
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
      'X-Ray (active tracing) has no resource-level permissions: xray:PutTraceSegments and xray:PutTelemetryRecords need Resource "*". Nor have states:SendTaskSuccess and states:SendTaskFailure (a task token names its execution), granted to the functions that hand tokens back.';
    ack(
      this.blobBucket,
      'AwsSolutions-S1',
      'The blob store holds results and arguments that the operations table points at (and whose reads and writes the functions trace); server access logs would copy that traffic into another bucket, to be retained and secured in turn.',
    );
    for (const fn of Object.values(this.functions)) {
      ack(fn.role!, 'AwsSolutions-IAM5[Resource::*]', xray);
      ack(
        fn.role!,
        `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(this.blobBucket.node.defaultChild as s3.CfnBucket)}.Arn>/*]`,
        'Objects of the blob store are keyed by operation id, made at run time: every key of the one bucket, and only get and put.',
      );
      ack(
        fn,
        'AwsSolutions-L1',
        'The runtime is the `runtime` prop (default Node.js 24, the newest LTS Lambda runtime); the bundles target its Node.js major (infra/bundling.ts). Moving to a newer one is a deliberate change, tested first.',
      );
      ack(fn, 'Serverless-LambdaLatestVersion', 'Same as AwsSolutions-L1: the runtime is the `runtime` prop, a supported Node.js runtime.');
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
    ack(
      this.expressStateMachine,
      'AwsSolutions-SF1',
      'The Express machine logs at ERROR: at ALL a call that succeeds writes 13 events, more than half of its log bill, while its DynamoDB record and trace already tell each step; failures are still logged.',
    );
    if (!this.xrayTracing) {
      const reason =
        'X-Ray is the xrayTracing prop, off by default: Lambda samples the first call each second and 5% after, so at low traffic it traces nearly every call at $5 per million; OpenTelemetry spans are exported wherever OTEL_EXPORTER_OTLP_ENDPOINT is set.';
      for (const fn of Object.values(this.functions)) ack(fn, 'Serverless-LambdaTracing', reason);
      for (const machine of [this.stateMachine, this.expressStateMachine]) {
        ack(machine, 'Serverless-StepFunctionStateMachineXray', reason);
        ack(machine, 'AwsSolutions-SF2', reason);
      }
    }
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
        'The secret is the principals document (API keys edited by operators or written by the construct); a rotation Lambda cannot invent keys that agents hold. Rotate by editing the document: the runner re-reads it within 30 s.',
      );
    }
    if (this.signingKeySeed)
      ack(
        this.signingKeySeed.secret,
        'AwsSolutions-SMG4',
        'The signing key of approval links, MCP session ids and console sessions: rotating it ends every link and session in flight, so it is rotated by hand (store a new value); the runner re-reads it within 30 s.',
      );
    ack(
      this.sweepScheduleRole,
      `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(this.functions.Sweeper.node.defaultChild as lambda.CfnFunction)}.Arn>:*]`,
      'aws-scheduler-targets grants lambda:InvokeFunction on the function and its versions; the schedule invokes the unqualified function.',
    );
    for (const route of this.apiRoutes)
      ack(
        route,
        'AwsSolutions-APIG4',
        'Authentication is in the app: bearer keys from the principals secret (agents, approvers, reviewers, MCP clients), HMAC-signed approval links and console sessions; IAM, JWT or Lambda authorizers do not fit agent API keys.',
      );
  }
}
