import './env-defaults';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { serve } from '@hono/node-server';
import { TABLE_ENV, type TableNames } from '../functions/adapters/tables';
import { depsFromEnv, parseEnv } from '../functions/handlers/runtime';
import type { RunnerConfig } from '../functions/core/config';
import type { Deps } from '../functions/steps/deps';
import { sweep } from '../functions/steps/resume';
import { createSandbox } from '../sandbox/server';
import { LIFECYCLE_FUNCTIONS, placeholderOf, readDefinition, substitute, type LifecycleFunction } from '../statemachines/definition';
import { ensureTables, localClient, startDynamoLocal } from './dynamodb-local';
import { makeHandlers, type HandlerMode } from './handlers';
import { LocalStepFunctions } from './sfn-endpoint';

export interface StackOptions {
  /** Holds DynamoDB Local's files and the sandbox state; a restart with the same directory keeps them. */
  dataDir: string;
  configPath: string;
  port?: number;
  sandboxPort?: number;
  /** Use a DynamoDB (Local) that is already running instead of starting one. */
  dynamoEndpoint?: string;
  tablePrefix?: string;
  sweepIntervalMs?: number;
  /** A DynamoDB client for the handlers (for example with counting middleware, in the benchmark). */
  dynamoClient?: DynamoDBClient;
  /** `bundled`: every Lambda handler from the bundle CDK deploys (local/handlers.ts); default `source`. */
  handlers?: HandlerMode;
}

export interface Stack {
  apiUrl: string;
  sandboxUrl: string;
  deps: Deps;
  /** Operations resumed at boot: after a restart no execution survives, so every active one continues. */
  recovered: string[];
  /** Which handlers run: the TypeScript sources or the deployed bundles. */
  handlers: HandlerMode;
  /** The embedded engine's state machine, for Step Functions calls (DescribeExecution, history). */
  stateMachineArn: string;
  stop(): Promise<void>;
}

/** Creates the config file with random keys for one principal of each role, if it does not exist. */
export function ensureConfig(path: string): { created: boolean } {
  if (existsSync(path)) return { created: false };
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const key = () => `tr_${randomBytes(24).toString('base64url')}`;
  const config: RunnerConfig = {
    principals: [
      { id: 'agent', key: key(), roles: ['agent'], tools: '*' },
      { id: 'approver', key: key(), roles: ['approver'], tools: [] },
      { id: 'reviewer', key: key(), roles: ['reviewer'], tools: [] },
      { id: 'admin', key: key(), roles: ['admin'], tools: '*' },
    ],
    approvalSecret: randomBytes(32).toString('base64url'),
    approvalTtlSeconds: 86400,
  };
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { created: true };
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolvePort((server.address() as AddressInfo).port));
  });
}

/**
 * The embedded stack: DynamoDB Local, the ASL on the embedded engine behind a Step Functions endpoint,
 * the Lambda handlers in-process, the API and the sandbox. Handlers get their endpoints from the same
 * environment variables the AWS SDK reads on AWS.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  // Everything started so far, stopped in reverse order on shutdown or when a later part fails to start.
  const started: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const stopPart of started.splice(0).reverse()) await stopPart();
  };
  try {
    return await startParts(options, started, stop);
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((r) => {
    server.close(() => r());
    server.closeAllConnections();
  });
}

async function startParts(options: StackOptions, started: (() => Promise<void>)[], stop: () => Promise<void>): Promise<Stack> {
  mkdirSync(options.dataDir, { recursive: true });
  ensureConfig(options.configPath);
  const sandbox = createSandbox(options.dataDir);
  const sandboxPort = await listen(sandbox, options.sandboxPort ?? 0);
  started.push(() => closeServer(sandbox));
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;

  let dynamoEndpoint = options.dynamoEndpoint;
  if (!dynamoEndpoint) {
    const dynamo = await startDynamoLocal(join(options.dataDir, 'dynamodb'));
    started.push(() => dynamo.stop());
    dynamoEndpoint = dynamo.endpoint;
  }
  const prefix = options.tablePrefix ?? 'toolrunner';
  const tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  const admin = localClient(dynamoEndpoint);
  await ensureTables(admin, tables);
  admin.destroy();

  const arnOf = (name: LifecycleFunction) => `arn:aws:lambda:us-east-1:000000000000:function:${prefix}-${name}`;
  let deps!: Deps;
  let lambdaEnv!: Record<string, string>;
  const handlers = await makeHandlers(options.handlers ?? 'source', {
    deps: () => deps,
    // What a Lambda of this stack would get; PUBLIC_BASE_URL once the API's port is known.
    lambdaEnv: () => ({ ...lambdaEnv, PUBLIC_BASE_URL: deps.publicBaseUrl }),
  });
  const definition = substitute(readDefinition(), Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [placeholderOf(n), arnOf(n)])));
  const engine = new LocalStepFunctions(definition, Object.fromEntries(LIFECYCLE_FUNCTIONS.map((n) => [arnOf(n), handlers.lifecycle[n]])), `${prefix}-invocation`);
  const sfnEndpoint = await engine.listen();
  started.push(() => engine.close());

  const port = options.port ?? 0;
  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_ENDPOINT_URL_SFN: sfnEndpoint,
  });
  lambdaEnv = {
    ...Object.fromEntries(Object.entries(TABLE_ENV).map(([id, name]) => [name, tables[id as keyof TableNames]])),
    STATE_MACHINE_ARN: engine.stateMachineArn,
    SANDBOX_URL: sandboxUrl,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port || 3000}`,
    TOOLRUNNER_CONFIG: options.configPath,
  };
  const env = parseEnv(lambdaEnv);
  deps = depsFromEnv(env, { abortSignalFor: engine.abortSignalFor, dynamoClient: options.dynamoClient });

  const api = serve({ fetch: handlers.api, port, hostname: '127.0.0.1' }) as Server;
  const apiPort = await new Promise<number>((r, reject) => {
    api.once('error', reject);
    api.once('listening', () => r((api.address() as AddressInfo).port));
  });
  started.push(() => closeServer(api));
  deps.publicBaseUrl = `http://127.0.0.1:${apiPort}`;

  const recovered = await sweep(deps, 1000, { ignoreLeases: true });
  let sweeping = false;
  const timer = setInterval(async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      await handlers.sweep();
    } catch (error) {
      console.error(`sweeper: ${(error as Error).message}`);
    } finally {
      sweeping = false;
    }
  }, options.sweepIntervalMs ?? 5000);
  timer.unref();
  started.push(async () => clearInterval(timer));

  return { apiUrl: `http://127.0.0.1:${apiPort}`, sandboxUrl, deps, recovered, handlers: handlers.mode, stateMachineArn: engine.stateMachineArn, stop };
}
