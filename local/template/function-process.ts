import { type ChildProcess, type Serializable, spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';

/** What an execution environment (one instance of a function) is started with. */
export interface InstanceOptions {
  /** The runtime's code (lambda-pool.ts), evaluated in the instance's thread. */
  runtime: string;
  /** Exactly the function's variables: `process.env` inside is this object. */
  env: Record<string, string>;
  /** The heap limit (Lambda's `MemorySize`). */
  memoryMb: number;
  workerData: Record<string, unknown>;
}

/** What an instance reports: messages of the runtime, its output, a crash, its end. */
export interface InstanceEvents {
  message(message: unknown): void;
  log(chunk: Buffer): void;
  error(error: { message: string; code?: string }): void;
  exit(code: number): void;
}

export interface Instance {
  post(message: unknown): void;
  terminate(): Promise<void>;
}

export type InstanceStarter = (options: InstanceOptions, events: InstanceEvents) => Instance;

function workerOf(options: InstanceOptions): Worker {
  return new Worker(options.runtime, {
    eval: true,
    env: options.env,
    execArgv: [],
    resourceLimits: { maxOldGenerationSizeMb: options.memoryMb },
    stdout: true,
    stderr: true,
    workerData: options.workerData,
  });
}

/** Instances as worker threads of this very process (when no function process is wanted). */
export const inThisProcess: InstanceStarter = (options, events) => {
  const worker = workerOf(options);
  worker.unref();
  worker.stdout.on('data', events.log);
  worker.stderr.on('data', events.log);
  worker.on('message', events.message);
  worker.on('error', (error) => events.error({ message: error.message, code: (error as NodeJS.ErrnoException).code }));
  worker.on('exit', events.exit);
  return { post: (m) => worker.postMessage(m), terminate: () => worker.terminate().then(() => undefined) };
};

/**
 * The function's process: started with the Lambda runtime's Node.js, it holds the function's instances as
 * worker threads and relays their messages and output over IPC. It exits when its parent does (the IPC
 * channel closes), so a SIGKILLed `npm start` leaves no function behind.
 */
const HOST = `
const { Worker } = require('node:worker_threads');
const instances = new Map();
const send = (m) => { if (process.connected) process.send(m); };
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  if (m.start !== undefined) {
    const w = new Worker(m.options.runtime, {
      eval: true, env: m.options.env, execArgv: [], stdout: true, stderr: true,
      resourceLimits: { maxOldGenerationSizeMb: m.options.memoryMb }, workerData: m.options.workerData,
    });
    instances.set(m.start, w);
    const log = (c) => send({ id: m.start, log: c.toString('base64') });
    w.stdout.on('data', log);
    w.stderr.on('data', log);
    w.on('message', (message) => send({ id: m.start, message }));
    w.on('error', (e) => send({ id: m.start, error: { message: e.message, code: e.code } }));
    w.on('exit', (code) => { instances.delete(m.start); send({ id: m.start, exit: code }); });
  } else if (m.post !== undefined) instances.get(m.post)?.postMessage(m.message);
  else if (m.terminate !== undefined) instances.get(m.terminate)?.terminate();
});
send({ ready: process.version });
`;

type HostMessage =
  | { ready: string }
  | { id: number; log: string }
  | { id: number; message: unknown }
  | { id: number; error: { message: string; code?: string } }
  | { id: number; exit: number };

/**
 * One function's process. Should it die (it is not meant to), its instances fail as crashed ones do and the
 * next instance starts a new process.
 */
export class FunctionProcess {
  private child!: ChildProcess;
  private readonly instances = new Map<number, { events: InstanceEvents; child: ChildProcess }>();
  private next = 0;
  private closed = false;
  /** The Node.js version the process runs (`v24.x`), once it is up. */
  readonly version: Promise<string>;

  constructor(
    readonly nodeBinary: string,
    private readonly name: string,
    private readonly onExit: (line: string) => void,
  ) {
    this.version = this.launch();
    this.version.catch(() => undefined);
  }

  /** Starts one instance (a worker thread) inside this process. */
  start: InstanceStarter = (options, events) => {
    if (!this.closed && !this.child.connected) void this.launch();
    const id = this.next++;
    this.instances.set(id, { events, child: this.child });
    this.send({ start: id, options });
    return {
      post: (message) => this.send({ post: id, message }),
      terminate: async () => {
        this.send({ terminate: id });
      },
    };
  };

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
  }

  private launch(): Promise<string> {
    // Nothing of the stack's environment: each instance gets exactly its function's variables.
    const child = spawn(this.nodeBinary, ['--title', `toolrunner-fn-${this.name}`, '-e', HOST], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: { PATH: process.env.PATH ?? '' },
    });
    this.child = child;
    const version = new Promise<string>((resolve, reject) => {
      child.once('error', reject);
      child.once('message', (m: HostMessage) => ('ready' in m ? resolve(m.ready) : reject(new Error('unexpected first message'))));
    });
    child.on('message', (m: HostMessage) => {
      if (!('id' in m)) return;
      const events = this.instances.get(m.id)?.events;
      if (!events) return;
      if ('log' in m) events.log(Buffer.from(m.log, 'base64'));
      else if ('message' in m) events.message(m.message);
      else if ('error' in m) events.error(m.error);
      else if ('exit' in m) {
        this.instances.delete(m.id);
        events.exit(m.exit);
      }
    });
    child.on('exit', (code, signal) => {
      if (!this.closed) this.onExit(`function process ${this.name} exited (${signal ?? code}): its instances are lost`);
      for (const [id, instance] of this.instances) {
        if (instance.child !== child) continue;
        this.instances.delete(id);
        instance.events.exit(1);
      }
    });
    return version;
  }

  private send(message: object): void {
    if (this.child.connected) this.child.send(message as Serializable);
  }
}
