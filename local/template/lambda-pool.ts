import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { FunctionConcurrency } from './account-concurrency';
import { type Instance, type InstanceStarter, inThisProcess } from './function-process';

/** Lambda's synchronous invocation limit, request and response alike. */
export const LAMBDA_PAYLOAD_LIMIT_BYTES = 6 * 1024 * 1024;

/**
 * Execution environments per function at once when no account pool limits it. Each is a worker thread with
 * its own copy of the bundle, and a cold start costs seconds of CPU on a busy two-core machine: beyond this
 * many, invocations wait for a free environment instead.
 */
export const DEFAULT_CONCURRENCY = 8;

/** Execution environments per function started with the stack: one before it is ready, one more beside. */
export const PREWARMED = 2;

/** How long an invocation waits for a busy environment of its function before a new one is started. */
export const SCALE_OUT_AFTER_MS = 1_000;

/**
 * A failed invocation as Lambda reports it: `name` is the `errorType` (what Step Functions' ErrorEquals
 * matches). `functionError` is false when Lambda refused the call itself (the function never ran).
 */
export class LambdaError extends Error {
  constructor(
    name: string,
    message: string,
    readonly functionError = true,
  ) {
    super(message);
    this.name = name;
  }
}

/** What one function runs with: its bundle, exactly the environment it gets, its memory and its timeout. */
export interface LambdaSpec {
  name: string;
  arn: string;
  codeDir: string;
  /** `index.handler`: module `index` (.mjs, .js or .cjs) in `codeDir`, export `handler`. */
  handler: string;
  environment: Record<string, string>;
  memoryMb: number;
  timeoutSeconds: number;
  logGroupName: string;
  /** How Lambda writes its own lines (START, END, REPORT) to the log: as text, or as JSON records from a level. */
  logFormat?: 'Text' | 'JSON';
  systemLogLevel?: 'DEBUG' | 'INFO' | 'WARN';
  /** Where the function's output goes (what CloudWatch Logs would receive). */
  logFile: string;
  /** Execution environments at once; more invocations wait for one to be free (default: the concurrency's limit). */
  maxConcurrency?: number;
  /** Its share of the account's pool: an invocation beyond it is throttled (`TooManyRequestsException`). */
  concurrency?: FunctionConcurrency;
  /** Where instances start: by default worker threads of this process; template mode, the function's own process. */
  startInstance?: InstanceStarter;
  /** Extra milliseconds a new instance takes before its first invocation (the `cold-start` fault). */
  coldStartDelayMs?: () => number;
  /**
   * Told of each invocation's duration and busy time (the CPU time of its environment's thread), and of
   * everything the function writes to its log (`npm run cost`).
   */
  meter?: { invoked?(durationMs: number, busyMs: number): void; logged?(chunk: Buffer): void };
}

/**
 * The execution environment, run in a worker thread: its init phase loads the bundle (the cold start) and
 * reports ready, then it runs one invocation at a time, events and results crossing as JSON text as on Lambda.
 */
const RUNTIME = `
const { parentPort, workerData } = require('node:worker_threads');
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { performance } = require('node:perf_hooks');
// This thread's CPU time in ns (Linux: the first field of schedstat), so time spent waiting for a core on a
// loaded machine is not counted as busy; elsewhere the event loop's active time stands in.
const cpuNs = () => {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
};
const { codeDir, handler, name, arn, memoryMb, logGroupName } = workerData;
const dot = handler.lastIndexOf('.');
const moduleName = handler.slice(0, dot);
const exportName = handler.slice(dot + 1);
const failure = (errorType, errorMessage) => Object.assign(new Error(errorMessage), { name: errorType });
const describe = (error) => {
  const e = error instanceof Error ? error : new Error(String(error));
  return { errorType: e.name || 'Error', errorMessage: e.message };
};
async function load() {
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(codeDir, moduleName + ext)).find((f) => existsSync(f));
  if (!file) throw failure('Runtime.ImportModuleError', "Error: Cannot find module '" + moduleName + "'");
  const fn = (await import(pathToFileURL(file).href))[exportName];
  if (typeof fn !== 'function') throw failure('Runtime.HandlerNotFound', handler + ' is undefined or not exported');
  return fn;
}
const loading = load();
loading.then(() => parentPort.postMessage({ ready: true }), (error) => parentPort.postMessage({ ready: false, error: describe(error) }));
parentPort.on('message', async ({ id, event, deadline }) => {
  const loop = performance.eventLoopUtilization();
  const cpu = cpuNs();
  const busyMs = () => {
    const now = cpu === undefined ? undefined : cpuNs();
    return now === undefined ? performance.eventLoopUtilization(loop).active : (now - cpu) / 1e6;
  };
  try {
    const fn = await loading;
    const context = {
      functionName: name, functionVersion: '$LATEST', invokedFunctionArn: arn, memoryLimitInMB: String(memoryMb),
      awsRequestId: id, logGroupName, logStreamName: 'local', callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    };
    const input = JSON.parse(event);
    const result = await (fn.length >= 3
      ? new Promise((resolve, reject) => {
          const r = fn(input, context, (error, value) => (error ? reject(error) : resolve(value)));
          if (r && typeof r.then === 'function') r.then(resolve, reject);
        })
      : fn(input, context));
    parentPort.postMessage({ id, result: result === undefined ? 'null' : JSON.stringify(result), busyMs: busyMs() });
  } catch (error) {
    parentPort.postMessage({ id, error: describe(error), busyMs: busyMs() });
  }
});
`;

type Reply = { id: string; result?: string; error?: { errorType: string; errorMessage: string }; busyMs?: number };
type InitReply = { ready: boolean; error?: { errorType: string; errorMessage: string } };

interface Environment {
  instance: Instance;
  /** The init phase: resolves once the bundle is loaded (an init error fails the invocations instead). */
  initialized: Promise<void>;
  pending?: { id: string; settle(reply: Reply | Error): void };
}

/** One Lambda function: a pool of isolated execution environments (worker threads), created on demand. */
export class LambdaFunction {
  private readonly idle: Environment[] = [];
  private readonly all = new Set<Environment>();
  private readonly queue: ((env: Environment) => void)[] = [];
  private readonly log: WriteStream;
  private closed = false;

  constructor(readonly spec: LambdaSpec) {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    this.log = createWriteStream(spec.logFile, { flags: 'a' });
  }

  /** A synchronous invocation (RequestResponse): the function's result, or a `LambdaError`. */
  async invoke(event: unknown): Promise<unknown> {
    const payload = JSON.stringify(event ?? null);
    if (Buffer.byteLength(payload) > LAMBDA_PAYLOAD_LIMIT_BYTES)
      throw new LambdaError(
        'RequestEntityTooLargeException',
        `Request must be smaller than ${LAMBDA_PAYLOAD_LIMIT_BYTES} bytes for the InvokeFunction operation`,
        false,
      );
    const { concurrency } = this.spec;
    if (concurrency && !concurrency.tryAcquire()) throw new LambdaError('TooManyRequestsException', 'Rate Exceeded.', false);
    try {
      return await this.run(payload);
    } finally {
      concurrency?.release();
    }
  }

  private async run(payload: string): Promise<unknown> {
    const env = await this.acquire();
    try {
      await env.initialized;
    } catch (error) {
      this.discard(env);
      throw error;
    }
    const id = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    const started = performance.now();
    this.platform('start', id);
    const reply = await new Promise<Reply | Error>((settle) => {
      env.pending = { id, settle };
      const timer = setTimeout(() => {
        // As on Lambda: the environment is stopped mid-invocation, and the invocation fails.
        this.discard(env);
        settle(
          new LambdaError(
            'Sandbox.Timedout',
            `RequestId: ${id} Error: Task timed out after ${this.spec.timeoutSeconds.toFixed(2)} seconds`,
          ),
        );
      }, timeoutMs);
      env.pending.settle = (value) => {
        clearTimeout(timer);
        env.pending = undefined;
        settle(value);
      };
      env.instance.post({ id, event: payload, deadline: Date.now() + timeoutMs });
    });
    const durationMs = performance.now() - started;
    this.platform('report', id, durationMs, reply instanceof Error || Boolean(reply.error));
    this.spec.meter?.invoked?.(durationMs, reply instanceof Error ? 0 : (reply.busyMs ?? 0));
    if (reply instanceof Error) throw reply;
    this.release(env);
    if (reply.error) throw new LambdaError(reply.error.errorType, reply.error.errorMessage);
    const result = reply.result ?? 'null';
    if (Buffer.byteLength(result) > LAMBDA_PAYLOAD_LIMIT_BYTES)
      throw new LambdaError(
        'Function.ResponseSizeTooLarge',
        `Response payload size exceeded maximum allowed payload size (${LAMBDA_PAYLOAD_LIMIT_BYTES} bytes).`,
      );
    return JSON.parse(result);
  }

  /**
   * Starts execution environments ahead of the first invocations (as provisioned concurrency would), so cold
   * starts on this busy machine neither eat into the first requests' gateway timeout nor serialize two calls
   * that AWS would run side by side.
   */
  async prewarm(count: number): Promise<void> {
    const fresh = Array.from({ length: Math.max(0, count - this.all.size) }, () => this.spawn());
    this.idle.push(...fresh);
    await Promise.all(fresh.map((env) => env.initialized.catch(() => undefined)));
  }

  async close(): Promise<void> {
    this.closed = true;
    // An invocation in flight ends now, as refused, rather than at its timeout after the stack is gone.
    for (const env of this.all) env.pending?.settle(new LambdaError('ServiceException', 'the local stack is stopping', false));
    await Promise.all([...this.all].map((env) => env.instance.terminate()));
    this.all.clear();
    await new Promise<void>((r) => this.log.end(r));
  }

  /**
   * Lambda's own lines for one invocation, as it writes them: `START`, then `END` and `REPORT` (text), or
   * `platform.start` and `platform.report` records (JSON, at system level INFO or DEBUG). Written to the
   * log directly: they are Lambda's, not the function's output (`npm run cost` prices them itself).
   */
  private platform(phase: 'start' | 'report', requestId: string, durationMs = 0, failed = false): void {
    if (this.closed) return;
    const { logFormat = 'Text', systemLogLevel = 'INFO', memoryMb } = this.spec;
    const time = new Date().toISOString();
    const billed = Math.ceil(durationMs);
    if (logFormat === 'JSON') {
      if (systemLogLevel === 'WARN') return;
      const record =
        phase === 'start'
          ? { requestId, version: '$LATEST' }
          : {
              requestId,
              metrics: { durationMs: Number(durationMs.toFixed(2)), billedDurationMs: billed, memorySizeMB: memoryMb },
              status: failed ? 'error' : 'success',
            };
      this.log.write(`${JSON.stringify({ time, type: `platform.${phase}`, record })}\n`);
      return;
    }
    this.log.write(
      phase === 'start'
        ? `START RequestId: ${requestId} Version: $LATEST\n`
        : `END RequestId: ${requestId}\nREPORT RequestId: ${requestId}\tDuration: ${durationMs.toFixed(2)} ms\tBilled Duration: ${billed} ms\tMemory Size: ${memoryMb} MB\t\n`,
    );
  }

  private async acquire(): Promise<Environment> {
    if (this.closed) throw new LambdaError('ServiceException', 'the local stack is stopping', false);
    const ready = this.idle.pop();
    if (ready) return ready;
    if (this.all.size === 0) return this.spawn();
    return new Promise((resolve) => {
      const waiter = (env: Environment) => {
        clearTimeout(timer);
        resolve(env);
      };
      this.queue.push(waiter);
      // Scale out only when no environment frees up soon: a burst of short calls is served by the warm ones
      // (a cold start costs seconds here), a call held long (a long-poll) gets a new environment beside it.
      const timer = setTimeout(() => {
        const at = this.queue.indexOf(waiter);
        if (at < 0 || this.closed || this.all.size >= this.environmentsAtMost()) return;
        this.queue.splice(at, 1);
        resolve(this.spawn());
      }, SCALE_OUT_AFTER_MS);
    });
  }

  private environmentsAtMost(): number {
    return this.spec.maxConcurrency ?? this.spec.concurrency?.limit ?? DEFAULT_CONCURRENCY;
  }

  private release(env: Environment): void {
    const next = this.queue.shift();
    if (next) next(env);
    else this.idle.push(env);
  }

  private discard(env: Environment): void {
    this.all.delete(env);
    const at = this.idle.indexOf(env);
    if (at >= 0) this.idle.splice(at, 1);
    void env.instance.terminate();
    // A waiting invocation gets a fresh environment in its place.
    const next = this.queue.shift();
    if (next && !this.closed) next(this.spawn());
  }

  private spawn(): Environment {
    const { spec } = this;
    let initDone!: (error?: LambdaError) => void;
    const initialized = new Promise<void>((resolve, reject) => {
      initDone = (error) => (error ? reject(error) : resolve());
    });
    initialized.catch(() => undefined);
    let env!: Environment;
    const crashed = (error: { message: string; code?: string }) => {
      const oom = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.log.write(`${new Date().toISOString()} ${oom ? 'out of memory' : 'runtime exited'}: ${error.message}\n`);
      const pending = env.pending;
      initDone(new LambdaError('Runtime.ExitError', `Runtime exited during init: ${error.message}`));
      this.discard(env);
      pending?.settle(
        oom
          ? new LambdaError('Runtime.OutOfMemory', `Runtime exited with error: out of memory (${spec.memoryMb} MB)`)
          : new LambdaError('Runtime.ExitError', `Runtime exited with error: ${error.message}`),
      );
    };
    const instance = (spec.startInstance ?? inThisProcess)(
      {
        runtime: RUNTIME,
        // Exactly the function's variables: process.env inside is this object, nothing of the stack's own.
        env: spec.environment,
        memoryMb: spec.memoryMb,
        workerData: {
          codeDir: spec.codeDir,
          handler: spec.handler,
          name: spec.name,
          arn: spec.arn,
          memoryMb: spec.memoryMb,
          logGroupName: spec.logGroupName,
        },
      },
      {
        log: (chunk) => {
          this.log.write(chunk);
          spec.meter?.logged?.(chunk);
        },
        message: (message) => {
          const reply = message as Reply | InitReply;
          if ('ready' in reply) {
            const error = reply.error && new LambdaError(reply.error.errorType, reply.error.errorMessage);
            const delay = spec.coldStartDelayMs?.() ?? 0;
            if (delay > 0) setTimeout(() => initDone(error), delay).unref();
            else initDone(error);
          } else if (env.pending?.id === reply.id) env.pending.settle(reply);
        },
        error: crashed,
        exit: (code) => {
          if (this.all.has(env) && !this.closed) crashed({ message: `exit status ${code}` });
        },
      },
    );
    env = { instance, initialized };
    this.all.add(env);
    return env;
  }
}
