import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { RunnerConfig } from '../../functions/core/config';
import { createClient, type ToolRunnerClient } from '../../functions/client';
import type { TraceEvent } from '../../functions/core/trace';
import type { HandlerMode } from '../../local/handlers';
import { startStack, type Stack, type StackOptions } from '../../local/stack';
import { seeded } from './seeded';
import { startStackProcess } from './stack-process';
import { deployedTarget, handlerMode, isEmbedded, Target } from './target';

export interface Keys {
  agent: string;
  approver: string;
  reviewer: string;
  admin: string;
  other: string;
}

export interface TestStack
  extends Pick<Stack, 'apiUrl' | 'sandboxUrl' | 'stop' | 'published' | 'denials' | 'configSecretArn' | 'awsFaults' | 'aws' | 'alarms'>,
    Partial<Pick<Stack, 'tables'>> {
  /** Only on the embedded stack: the runner's dependencies (tests seed its random source). */
  deps?: Stack['deps'];
  /** Only on the embedded stack: its state machine on the local Step Functions endpoint. */
  stateMachineArn?: string;
  keys: Keys;
  configPath: string;
  dataDir: string;
  api: Api;
  /** Embedded only: stops the whole stack and starts it again on the same tables and data; returns the operations it resumed. */
  restart?(): Promise<string[]>;
  /**
   * Embedded only: another API process (a child process with its own engine and sandbox) on the same tables,
   * configuration and DynamoDB Local, as a second Lambda container behind one API would be.
   */
  anotherProcess?(): Promise<{ apiUrl: string; stop(): Promise<void> }>;
  /** Rewrites the principals file (the runner re-reads it on change). */
  editConfig(edit: (config: RunnerConfig) => void): void;
  sandbox: Sandbox;
}

/**
 * The stack under test: by default an embedded stack against the run's shared DynamoDB Local, with its own
 * tables and sandbox state; with TARGET=localstack|aws, the deployed stack named by the environment.
 */
export async function startTestStack(
  options: { seed?: number; handlers?: HandlerMode } & Pick<
    StackOptions,
    'editTemplate' | 'tools' | 'toolsEntry' | 'alarmTimeScale' | 'meter' | 'assemblyDir' | 'onDeploy' | 'deploySeed'
  > = {},
): Promise<TestStack> {
  if (!isEmbedded) {
    const target = deployedTarget();
    return {
      ...target,
      configPath: '',
      dataDir: '',
      api: new Api(target.apiUrl),
      sandbox: new Sandbox(target.sandboxUrl),
      editConfig: () => {
        throw new Error(`editing principals needs the embedded stack (TARGET=${Target}): update the config secret instead`);
      },
      stop: async () => undefined,
    };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'toolrunner-test-'));
  const configPath = join(dataDir, 'config.json');
  const key = () => `tr_${randomBytes(18).toString('base64url')}`;
  const keys: Keys = { agent: key(), approver: key(), reviewer: key(), admin: key(), other: key() };
  const config: RunnerConfig = {
    principals: [
      { id: 'agent', key: keys.agent, roles: ['agent'], tools: '*' },
      { id: 'approver', key: keys.approver, roles: ['approver'], tools: [] },
      { id: 'reviewer', key: keys.reviewer, roles: ['reviewer'], tools: [] },
      { id: 'admin', key: keys.admin, roles: ['admin'], tools: '*' },
      { id: 'other', key: keys.other, roles: ['agent'], tools: ['get_order'] },
    ],
    approvalSecret: randomBytes(32).toString('base64url'),
    approvalTtlSeconds: 86400,
  };
  writeFileSync(configPath, JSON.stringify(config));
  const stackOptions = {
    dataDir,
    configPath,
    dynamoEndpoint: inject('dynamoEndpoint'),
    tablePrefix: `t${randomBytes(5).toString('hex')}`,
    // The tables are this stack's own (the shared DynamoDB Local holds every test's): a restart resumes all.
    ownsTables: true,
    sweepIntervalMs: 500,
    handlers: options.handlers ?? handlerMode,
    editTemplate: options.editTemplate,
    toolsEntry: options.toolsEntry,
    alarmTimeScale: options.alarmTimeScale,
    meter: options.meter,
    assemblyDir: options.assemblyDir,
    onDeploy: options.onDeploy,
    deploySeed: options.deploySeed,
    // A tools module of the test's own instead of the demo tools (then no sandbox starts).
    tools: options.tools,
  };
  let stack = await startStack(stackOptions);
  if (options.seed !== undefined) stack.deps.random = seeded(options.seed);
  const editConfig = (edit: (c: RunnerConfig) => void) => {
    const current = JSON.parse(readFileSync(configPath, 'utf8')) as RunnerConfig;
    edit(current);
    writeFileSync(configPath, JSON.stringify(current));
  };
  const testStack: TestStack = {
    apiUrl: stack.apiUrl,
    sandboxUrl: stack.sandboxUrl,
    deps: stack.deps,
    stateMachineArn: stack.stateMachineArn,
    published: stack.published,
    alarms: stack.alarms,
    denials: stack.denials,
    configSecretArn: stack.configSecretArn,
    awsFaults: stack.awsFaults,
    aws: stack.aws,
    tables: stack.tables,
    keys,
    configPath,
    dataDir,
    api: new Api(stack.apiUrl),
    sandbox: new Sandbox(stack.sandboxUrl!),
    editConfig,
    stop: async () => {
      await stack.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    restart: async () => {
      // The process dies (no execution survives); the tables and the sandbox state stay, as after a real restart.
      await stack.stop();
      stack = await startStack(stackOptions);
      Object.assign(testStack, {
        apiUrl: stack.apiUrl,
        sandboxUrl: stack.sandboxUrl,
        deps: stack.deps,
        stateMachineArn: stack.stateMachineArn,
        api: new Api(stack.apiUrl),
        sandbox: new Sandbox(stack.sandboxUrl!),
        published: stack.published,
        alarms: stack.alarms,
        denials: stack.denials,
        awsFaults: stack.awsFaults,
        aws: stack.aws,
        tables: stack.tables,
      });
      return stack.recovered;
    },
    // A second process on the same tables: its boot must leave the first one's live operations alone.
    anotherProcess: () =>
      startStackProcess({ ...stackOptions, ownsTables: false, dataDir: mkdtempSync(join(tmpdir(), 'toolrunner-test-')) }),
  };
  return testStack;
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * The runner's API for tests: typed calls go through the package's client (`toolrunner/client`), so every
 * answer is also checked against the API's response schemas; `request` stays raw for tests of malformed
 * input, status codes and headers.
 */
export class Api {
  private readonly clients = new Map<string, ToolRunnerClient>();
  constructor(readonly baseUrl: string) {}

  /** The typed client for one principal's key. */
  client(key: string): ToolRunnerClient {
    let client = this.clients.get(key);
    if (!client) {
      client = createClient({ baseUrl: this.baseUrl, apiKey: key });
      this.clients.set(key, client);
    }
    return client;
  }

  async request<T = any>(
    method: string,
    path: string,
    options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply<T>> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
        ...(options.body !== undefined || options.raw !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // HTML or empty.
    }
    return { status: res.status, headers: res.headers, body };
  }

  async createRun(key: string, budgets?: Record<string, number>): Promise<string> {
    return (await this.client(key).createRun(budgets ? { budgets } : {})).runId;
  }

  call(key: string, runId: string, call: { callId: string; turn?: number; name: string; arguments: unknown }, wait = 25): Promise<Reply> {
    return this.request('POST', `/v1/runs/${runId}/tool-calls`, { key, body: { turn: 1, ...call }, headers: { prefer: `wait=${wait}` } });
  }

  async trace(key: string, runId: string): Promise<TraceEvent[]> {
    return (await this.client(key).getTrace(runId)) as TraceEvent[];
  }

  async operation(key: string, operationId: string): Promise<any> {
    return this.client(key).getOperation(operationId);
  }

  /** Polls (with a deadline, never a fixed sleep) until the predicate holds. */
  async until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export interface LedgerEntry {
  kind: string;
  id: string;
  idempotencyKey?: string;
  body: any;
  at: string;
}

export class Sandbox {
  constructor(readonly baseUrl: string) {}
  async fault(fault: { route: string; mode: string; count?: number; retryAfterSeconds?: number; delayMs?: number }): Promise<void> {
    const res = await fetch(`${this.baseUrl}/_sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(fault),
    });
    if (res.status !== 201) throw new Error(`fault: ${res.status} ${await res.text()}`);
  }
  async ledger(): Promise<LedgerEntry[]> {
    return (await fetch(`${this.baseUrl}/_sandbox/ledger`)).json() as Promise<LedgerEntry[]>;
  }
  async reset(): Promise<void> {
    await fetch(`${this.baseUrl}/_sandbox/reset`, { method: 'POST' });
  }
}

/** The trace as `type[:from>to]` steps for one operation: compact enough to assert whole sequences. */
export function shape(events: TraceEvent[], operationId?: string): string[] {
  return events
    .filter((e) => !operationId || e.operationId === operationId)
    .map((e) => (e.type === 'state.transition' ? `${e.from}>${e.to}` : e.type));
}
