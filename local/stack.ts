import './env-defaults';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TABLE_ENV, type TableNames } from '../functions/adapters/tables';
import { depsFromEnv, parseEnv } from '../functions/handlers/runtime';
import type { ToolSpec } from '../functions/core/tool-spec';
import { makeDemoTools } from '../functions/tools/demo-tools';
import type { Deps } from '../functions/core/ports';
import { sweep } from '../functions/steps/resume';
import {
  LIFECYCLE_FUNCTIONS,
  placeholderOf,
  readDefinition,
  readExpressDefinition,
  substitute,
  type LifecycleFunction,
} from '../statemachines/definition';
import { ensureConfig } from './config-file';
import { ensureTables, localClient } from './dynamodb-local';
import { makeHandlers, type HandlerMode } from './handlers';
import { LocalStepFunctions, type ExecutionSummary } from './sfn-endpoint';
import { bucketNameFor } from './s3-local';
import {
  blobPart,
  dynamoPart,
  ensureDataDir,
  progressReporter,
  serveApiPart,
  startSandboxPart,
  sweeperPart,
  type Started,
} from './stack-parts';
import type { CfnTemplate } from './template/assembly';
import type { AwsCall, Denial } from './template/aws-gateway';
import type { ApiRequestRecord } from './template/http-api';
import type { FunctionModel } from './template/stack-model';
import type { PublishedMessage } from './template/local-services';

export interface StackOptions {
  /** Holds DynamoDB Local's files and the sandbox state; a restart with the same directory keeps them. */
  dataDir: string;
  configPath: string;
  port?: number;
  sandboxPort?: number;
  /** Use a DynamoDB (Local) that is already running instead of starting one. */
  dynamoEndpoint?: string;
  /**
   * No other process uses these tables, so a lease in them was held by an execution of this stack's previous
   * run, which died with it, and the boot sweep resumes every active operation at once. Default: true when the
   * stack starts DynamoDB Local from the data directory it owns, false on a DynamoDB it was given, where
   * another process may be working: there the boot sweep resumes only operations whose leases have passed.
   */
  ownsTables?: boolean;
  tablePrefix?: string;
  sweepIntervalMs?: number;
  /** A DynamoDB client for the handlers (for example with counting middleware, in the benchmark). */
  dynamoClient?: DynamoDBClient;
  /** The tools to run instead of the demo tools; the sandbox (their upstream) is then not started. */
  tools?: ToolSpec[];
  /** Template mode: told of everything AWS bills, as it happens (`npm run cost`). */
  meter?: StackMeter;
  /** Told each part as it comes up, so a person starting the stack sees where the seconds go. */
  onProgress?(line: string): void;
  /**
   * `bundled`: every Lambda handler from the bundle CDK deploys (local/handlers.ts); `template`: the whole stack
   * from the synthesized cloud assembly (local/template/); default `source`.
   */
  handlers?: HandlerMode;
  /**
   * Template mode: a cloud assembly already synthesized (as `cdk deploy --app <dir>` takes one), read as it is
   * at start and at each update, instead of synthesizing the app `cdk.json` names into `cdk.out`.
   */
  assemblyDir?: string;
  /**
   * Template mode: on SIGHUP, the assembly is read again (synthesized first when stale) and applied over the
   * running stack as a CloudFormation update; told each line (`deploy: <logical id> switched`, ...).
   */
  onDeploy?(line: string): void;
  /** Template mode: the seed of the order in which an update switches functions that do not depend on each other (default random, printed). */
  deploySeed?: number;
  /** Template mode: changes a copy of the synthesized template before the stack is built from it (tests). */
  editTemplate?(template: CfnTemplate): void;
  /**
   * Template mode: the functions that bundle the tools module run bundles of this module instead, built with
   * the construct's esbuild options, as a deployment whose `tools.entry` is this module would (tests).
   */
  toolsEntry?: string;
  /**
   * Template mode: how many times faster than real time the alarms' periods pass (a test's 300 makes a 5-minute
   * period one second). Default `TOOLRUNNER_ALARM_TIME_SCALE`, else 1.
   */
  alarmTimeScale?: number;
}

/** What `npm run cost` counts on the stack built from the template; each hook is told as it happens. */
export interface StackMeter {
  /** A Lambda invocation ended (the API's too): the function (its template name), how long it ran, and how long it was busy. */
  invoked?(fn: FunctionModel, durationMs: number, busyMs: number): void;
  /** A function wrote this to its log: what CloudWatch Logs would ingest from it. */
  logged?(fn: FunctionModel, chunk: Buffer): void;
  /** An execution of either state machine ended. */
  executed?(summary: ExecutionSummary): void;
  /** A function's AWS call that IAM allowed; DynamoDB's with the capacity it consumed. */
  awsCall?(call: AwsCall): void;
  /** The HTTP API answered a request. */
  apiRequest?(request: ApiRequestRecord): void;
}

export interface Stack {
  apiUrl: string;
  /** Absent when the stack runs the caller's tools rather than the demo tools. */
  sandboxUrl?: string;
  deps: Deps;
  /** Operations resumed at boot: every active one on tables this stack owns, else those whose leases passed. */
  recovered: string[];
  /** Which handlers run: the TypeScript sources, the deployed bundles, or the stack built from the synthesized template. */
  handlers: HandlerMode;
  /** The embedded engine's state machine, for Step Functions calls (DescribeExecution, history). */
  stateMachineArn: string;
  /** The DynamoDB tables' names, for readers of their own (measurements, tests). */
  tables: TableNames;
  /** Template mode: what was published to the stack's SNS topics (email subscriptions get it in `<dataDir>/outbox/`). */
  published?: readonly PublishedMessage[];
  /** Template mode: the template's alarms as evaluated here, their actions, and the email outbox. */
  alarms?: import('./template/cloudwatch').LocalCloudWatch;
  /** Template mode: the AWS calls the IAM check refused. */
  denials?: readonly Denial[];
  /** Template mode: the config secret's ARN, as the runner's functions are told it. */
  configSecretArn?: string;
  /** Template mode: the AWS behaviours injected (`TOOLRUNNER_AWS_FAULTS`), and what they did. */
  awsFaults?: import('./template/aws-faults').AwsFaults;
  /** Template mode: the account's concurrency pool, and the `aws:` line `npm start` prints before `ready:`. */
  aws?: { line: string; account: import('./template/account-concurrency').AccountConcurrency };
  stop(): Promise<void>;
}

/**
 * The embedded stack: DynamoDB Local, the ASL on the embedded engine behind a Step Functions endpoint,
 * the Lambda handlers in-process, the API and the sandbox. Handlers get their endpoints from the same
 * environment variables the AWS SDK reads on AWS.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  // Everything started so far, stopped in reverse order on shutdown or when a later part fails to start.
  const started: Started = [];
  const stop = async () => {
    for (const stopPart of started.splice(0).reverse()) await stopPart();
  };
  try {
    if (options.handlers === 'template') {
      // Loaded only here: it needs the CDK app and the IAM simulator, which the other modes do not.
      const { startTemplateParts } = await import('./template/template-stack');
      return await startTemplateParts(options, started, stop);
    }
    return await startParts({ ...options, handlers: options.handlers }, started, stop);
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

async function startParts(
  options: StackOptions & { handlers?: Exclude<HandlerMode, 'template'> },
  started: Started,
  stop: () => Promise<void>,
): Promise<Stack> {
  const progress = progressReporter(options.onProgress);
  ensureDataDir(options.dataDir);
  ensureConfig(options.configPath);
  const sandboxUrl = options.tools ? undefined : await startSandboxPart(options.dataDir, options.sandboxPort ?? 0, started, progress);
  // The API listens before any part takes a port of the OS's choosing (DynamoDB Local, the blob store, the
  // lifecycle engine): a PORT in the ephemeral range could be handed to one of them. A request that comes
  // before the stack is up waits for it.
  let stackIsUp!: () => void;
  const up = new Promise<void>((resolve) => (stackIsUp = resolve));
  let serveApi: (request: Request) => Response | Promise<Response> = async (request) => {
    await up;
    return serveApi(request);
  };
  const apiPort = await serveApiPart((request) => serveApi(request), options.port ?? 0, started);
  const dynamoEndpoint = await dynamoPart(options, started, progress);
  const prefix = options.tablePrefix ?? 'toolrunner';
  const bucket = bucketNameFor(prefix);
  const blobEndpoint = await blobPart(options.dataDir, bucket, started, progress);
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  progress(`DynamoDB Local answering at ${dynamoEndpoint}; creating tables…`);
  const admin = localClient(dynamoEndpoint);
  await ensureTables(admin, tables);
  admin.destroy();
  progress('tables ready; starting the lifecycle engine…');

  const arnOf = (name: LifecycleFunction) => `arn:aws:lambda:us-east-1:000000000000:function:${prefix}-${name}`;
  let deps!: Deps;
  let lambdaEnv!: Record<string, string>;
  const handlers = await makeHandlers(options.handlers ?? 'source', {
    deps: () => deps,
    // What a Lambda of this stack would get.
    lambdaEnv: () => lambdaEnv,
  });
  const substitutions = Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), arnOf(n)]));
  // Both machines, as deployed; TOOLRUNNER_EXPRESS=off runs every call on Standard (the e2e suite checks both paths).
  const express = process.env.TOOLRUNNER_EXPRESS !== 'off';
  const engine = new LocalStepFunctions(
    [
      { name: `${prefix}-invocation`, definition: substitute(readDefinition(), substitutions), type: 'STANDARD' },
      ...(express
        ? [
            {
              name: `${prefix}-invocation-express`,
              definition: substitute(readExpressDefinition(), substitutions),
              type: 'EXPRESS' as const,
            },
          ]
        : []),
    ],
    Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [arnOf(n), handlers.lifecycle[n]])),
  );
  const sfnEndpoint = await engine.listen();
  started.push(() => engine.close());
  progress(`lifecycle engine (Step Functions endpoint) on ${sfnEndpoint}`);

  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_ENDPOINT_URL_SFN: sfnEndpoint,
    AWS_ENDPOINT_URL_S3: blobEndpoint,
  });
  lambdaEnv = {
    ...Object.fromEntries(Object.entries(TABLE_ENV).map(([id, name]) => [name, tables[id as keyof TableNames]])),
    STATE_MACHINE_ARN: engine.stateMachineArn,
    ...(express ? { EXPRESS_STATE_MACHINE_ARN: engine.arnOf(`${prefix}-invocation-express`) } : {}),
    ...(sandboxUrl ? { SANDBOX_URL: sandboxUrl } : {}),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    TOOLRUNNER_CONFIG: options.configPath,
    BLOB_BUCKET: bucket,
  };
  const env = parseEnv(lambdaEnv);
  deps = depsFromEnv(env, {
    // Without tools of its own the stack runs the demo tools against its sandbox.
    tools: options.tools ?? (sandboxUrl ? makeDemoTools(sandboxUrl) : undefined),
    abortSignalFor: engine.abortSignalFor,
    dynamoClient: options.dynamoClient,
    inProcessSteps: handlers.mode === 'source',
  });

  serveApi = handlers.api;
  stackIsUp();
  progress(`API listening on ${deps.publicBaseUrl}; resuming interrupted operations…`);

  const recovered = await sweep(deps, 1000, { ignoreLeases: options.ownsTables ?? !options.dynamoEndpoint });
  sweeperPart(handlers.sweep, options.sweepIntervalMs ?? 5000, started);

  return {
    apiUrl: `http://127.0.0.1:${apiPort}`,
    sandboxUrl,
    deps,
    recovered,
    handlers: handlers.mode,
    stateMachineArn: engine.stateMachineArn,
    tables,
    stop,
  };
}
