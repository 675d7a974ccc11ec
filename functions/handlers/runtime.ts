import { dirname, resolve as resolvePath } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient, type SFNClientConfig } from '@aws-sdk/client-sfn';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SNSClient } from '@aws-sdk/client-sns';
import { z } from 'zod';
import { fileConfigSource, secretConfigSource } from '../adapters/config-source';
import { policySource } from '../adapters/policy-source';
import { makeDocumentClient, makeDynamoStore } from '../adapters/dynamo-store';
import { dynamoWaitingPolls } from '../adapters/dynamo-waiting-polls';
import { watchedStore } from '../steps/operation-watch';
import { consoleChannel, makeNotifier, snsChannel, webhookChannel } from '../adapters/notifier';
import { slackChannel } from '../slack/channel';
import { noteApprovalMessages } from '../steps/approval-messages';
import { sfnLifecycle } from '../adapters/sfn-lifecycle';
import { powertoolsOnceGuard } from '../adapters/submission-guard';
import { TABLE_ENV } from '../adapters/tables';
import { makeRegistry, type ToolSpec } from '../core/tool-spec';
import type { Deps } from '../core/ports';
import { describedRegistry } from '../tools/described-tools';
import { withMcpUpstreams } from '../tools/mcp-upstream';
import { otelTelemetry } from '../adapters/otel';
import { guardProcess } from './process-guard';
import { startOtlpExport } from '../adapters/otlp-export';
import { emfMetrics, memoryMetrics } from '../adapters/metrics';
import { S3Client, s3Blobs, s3ClientConfig } from '../adapters/s3-blobs';
import { runnerLog, tracer } from './observability';
import { bothTelemetries, xrayTelemetry } from './xray-telemetry';
import { recentRuns } from '../steps/recent-runs';
import { lambdaToolHost } from '../adapters/tool-function';
import { lambdaToolDirectory } from '../adapters/tools-directory';

/** Environment, parsed once with zod: the same variables on AWS, LocalStack and the embedded stack. */
const EnvSchema = z
  .object({
    TABLE_RUNS: z.string().min(1),
    TABLE_OPERATIONS: z.string().min(1),
    TABLE_EVENTS: z.string().min(1),
    TABLE_WATCH: z.string().min(1),
    TABLE_LOCKS: z.string().min(1),
    TABLE_IDEMPOTENCY: z.string().min(1),
    STATE_MACHINE_ARN: z.string().min(1),
    /** The Express variant; without it every call runs on the Standard machine. */
    EXPRESS_STATE_MACHINE_ARN: z.string().min(1).optional(),
    /** Where the demo tools find their upstreams; without it and without `tools`, no tools (a Lambda that runs none). */
    SANDBOX_URL: z.string().url().optional(),
    PUBLIC_BASE_URL: z.string().url(),
    TOOLRUNNER_CONFIG: z.string().min(1).optional(),
    /** The construct's `policiesFile`, beside the bundle: it wins over the configuration's policies. */
    TOOLRUNNER_POLICIES_FILE: z.string().min(1).optional(),
    CONFIG_SECRET_ARN: z.string().min(1).optional(),
    /** The construct's signing key (links, MCP session ids, console sessions), apart from the principals document. */
    SIGNING_KEY_SECRET_ARN: z.string().min(1).optional(),
    /** The approval links topic: only the construct's `approvers` subscribe, each filtered on `approverId`. */
    APPROVAL_TOPIC_ARN: z.string().min(1).optional(),
    /** The link-free notices topic (approvals requested and decided, reviews needed): anyone may subscribe. */
    NOTICES_TOPIC_ARN: z.string().min(1).optional(),
    /** The blob store for results over 64 KiB and large arguments; without it such results are `invalid_output`. */
    BLOB_BUCKET: z.string().min(3).optional(),
    /** The `Tools` function (`toolIsolation: "function"`): the user's tools run there, not in this process. */
    TOOLS_FUNCTION_NAME: z.string().min(1).optional(),
    /** The construct's `maxWaitingPolls`: requests that may wait idle at once across every instance (the Api only). */
    TOOLRUNNER_MAX_WAITING_POLLS: z.coerce.number().int().min(0).max(1000).optional(),
  })
  .refine((e) => e.TOOLRUNNER_CONFIG || e.CONFIG_SECRET_ARN, 'set TOOLRUNNER_CONFIG (a file) or CONFIG_SECRET_ARN (a secret)');
export type RuntimeEnv = z.infer<typeof EnvSchema>;

export function parseEnv(env: NodeJS.ProcessEnv = process.env): RuntimeEnv {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(`configuration error: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'env'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/**
 * The Step Functions client's options. Against any custom endpoint StartSyncExecution must not get its
 * `sync-` host prefix (`sync-localhost` resolves nowhere): the embedded engine sets `AWS_ENDPOINT_URL_SFN`,
 * LocalStack hands its Lambdas `AWS_ENDPOINT_URL` only, and either one moves every call off AWS.
 */
export function sfnClientConfig(env: NodeJS.ProcessEnv = process.env): SFNClientConfig {
  const custom = Boolean(env.AWS_ENDPOINT_URL_SFN || env.AWS_ENDPOINT_URL) && env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS !== 'true';
  return { disableHostPrefix: custom };
}

/** What the caller adds to the environment: the tools (a user's module on AWS, `--tools` locally) and test seams. */
export type ExtraDeps = Partial<Pick<Deps, 'abortSignalFor' | 'metrics'>> & {
  dynamoClient?: DynamoDBClient;
  /** The tool specs to register; default: the demo tools when SANDBOX_URL is set, otherwise none. */
  tools?: ToolSpec[];
  /** The lifecycle steps run in this process and share this store (the embedded stack from sources). */
  inProcessSteps?: boolean;
};

/**
 * Builds the dependencies from the environment. Endpoints come from the SDK's standard variables
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SFN), so handlers never know where they run.
 */
export function depsFromEnv(env: RuntimeEnv, extra: ExtraDeps = {}): Deps {
  const { dynamoClient, tools, inProcessSteps = false, ...rest } = extra;
  const onLambda = Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
  const dynamo = tracer.captureAWSv3Client(dynamoClient ?? new DynamoDBClient({}));
  const tables = Object.fromEntries(Object.entries(TABLE_ENV).map(([id, name]) => [id, env[name as keyof RuntimeEnv] as string])) as Record<
    keyof typeof TABLE_ENV,
    string
  >;
  const blobs = env.BLOB_BUCKET ? s3Blobs(tracer.captureAWSv3Client(new S3Client(s3ClientConfig())), env.BLOB_BUCKET) : undefined;
  const doc = makeDocumentClient(dynamo);
  const dynamoStore = makeDynamoStore(doc, tables, Date.now, blobs);
  // Only where the steps run in this very process (the embedded stack from sources) can a waiter be told of
  // their commits; elsewhere (Lambda, the deployed bundles) it learns from the execution's end or by polling.
  const { store, watch } = inProcessSteps ? watchedStore(dynamoStore) : { store: dynamoStore, watch: undefined };
  const config = env.CONFIG_SECRET_ARN
    ? secretConfigSource(
        tracer.captureAWSv3Client(new SecretsManagerClient({})),
        env.CONFIG_SECRET_ARN,
        undefined,
        env.SIGNING_KEY_SECRET_ARN,
      )
    : fileConfigSource(env.TOOLRUNNER_CONFIG!);
  // EMF lines in the log wherever the deployment names the metrics namespace (the construct does, so on AWS
  // and in the stack built from its template, whose logs then hold what CloudWatch would ingest); else counters.
  const metrics = rest.metrics ?? (onLambda || process.env.POWERTOOLS_METRICS_NAMESPACE ? emfMetrics() : memoryMetrics());
  // Each approver's webhook everywhere; beside it SNS where the construct made topics, else the local output.
  const sns =
    env.APPROVAL_TOPIC_ARN || env.NOTICES_TOPIC_ARN
      ? snsChannel(tracer.captureAWSv3Client(new SNSClient({})), {
          linksTopicArn: env.APPROVAL_TOPIC_ARN,
          noticesTopicArn: env.NOTICES_TOPIC_ARN,
        })
      : undefined;
  // Retries are the runner's (its attempt policy), so the client makes one attempt.
  const toolsFunction = env.TOOLS_FUNCTION_NAME;
  const lambda = toolsFunction ? tracer.captureAWSv3Client(new LambdaClient({ maxAttempts: 1 })) : undefined;
  // With a `Tools` function this process never loads the tools module: it knows the tools from their description
  // (asked once per process) and each call's hooks from the check at validation, stored with the operation.
  const toolDirectory = toolsFunction && lambda ? lambdaToolDirectory(lambda, toolsFunction) : undefined;
  // The host runs what the description named (filled on the registry's first refresh).
  const described: Pick<ReadonlySet<string>, 'has'> = { has: (name) => toolDirectory?.hosts(name) ?? false };
  const toolHost = toolsFunction && lambda ? lambdaToolHost(lambda, toolsFunction, described as ReadonlySet<string>) : undefined;
  // Slack where the config document has `slack`: it reads the operation and keeps where it posted through the deps below.
  let self: Deps | undefined;
  const slack = slackChannel({
    config,
    operation: (id) => store.getOperation(id),
    secretFields: (name) => {
      const tool = self?.tools.get(name);
      return tool ? (tool.secretFields ?? []) : undefined;
    },
    noteMessages: (id, messages) => noteApprovalMessages(self!, id, messages),
  });
  const notifier = makeNotifier([webhookChannel({ config }), slack, sns ?? consoleChannel()], { metrics });
  const base = toolDirectory ? describedRegistry(() => toolDirectory.describe()) : makeRegistry(tools ?? []);
  // The configured MCP upstreams' tools join the registry when it is refreshed (see toolsReady).
  const registry = withMcpUpstreams(base, config);
  // A policiesFile is relative to the configuration file's folder locally, to the functions' asset on Lambda.
  const baseDir = env.TOOLRUNNER_CONFIG && !env.CONFIG_SECRET_ARN ? dirname(resolvePath(env.TOOLRUNNER_CONFIG)) : process.cwd();
  self = {
    store,
    watch,
    blobs,
    tools: registry,
    // The deployed policy file sits beside the bundle (infra/bundling.ts), whatever the working directory.
    policies: policySource(registry, {
      baseDir,
      deployedFile: env.TOOLRUNNER_POLICIES_FILE && resolvePath(import.meta.dirname, env.TOOLRUNNER_POLICIES_FILE),
    }),
    toolHost,
    ...(toolDirectory ? { toolDirectory } : {}),
    config,
    lifecycle: sfnLifecycle(
      tracer.captureAWSv3Client(new SFNClient(sfnClientConfig())),
      env.STATE_MACHINE_ARN,
      env.EXPRESS_STATE_MACHINE_ARN,
      metrics,
    ),
    notifier,
    now: () => Date.now(),
    random: Math.random,
    log: runnerLog,
    publicBaseUrl: env.PUBLIC_BASE_URL.replace(/\/$/, ''),
    onceGuard: powertoolsOnceGuard(dynamo, env.TABLE_IDEMPOTENCY),
    // On Lambda: X-Ray subsegments (Powertools); OpenTelemetry spans wherever OTLP is configured.
    telemetry: onLambda ? bothTelemetries(xrayTelemetry(tracer), otelTelemetry()) : otelTelemetry(),
    // Per process (per warm Lambda container): the next call into a run this process admitted skips reading it.
    recentRuns: recentRuns(),
    ...(env.TOOLRUNNER_MAX_WAITING_POLLS === undefined
      ? {}
      : { waitingPolls: dynamoWaitingPolls(doc, tables.watch, env.TOOLRUNNER_MAX_WAITING_POLLS) }),
    ...rest,
    metrics,
  };
  return self;
}

let shared: Deps | undefined;
/** One set of clients per Lambda container, made on first use; `tools` come from the bundled user module. */
export function lazyDeps(extra: Pick<ExtraDeps, 'tools'> = {}): Deps {
  if (!shared) {
    startOtlpExport();
    guardProcess();
  }
  shared ??= depsFromEnv(parseEnv(), extra);
  return shared;
}
