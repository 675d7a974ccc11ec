import './polyfills';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StateMachine } from 'aws-local-stepfunctions';
import { z } from 'zod';

/** A Lambda as the embedded stack runs it: in-process, with a JSON round trip at the boundary as on AWS. */
export type LocalFunction = (payload: unknown) => Promise<unknown>;

/** Step Functions' quota on a state's input, output and a task's result (UTF-8 bytes), enforced where AWS enforces it. */
export const STATE_PAYLOAD_LIMIT_BYTES = 256 * 1024;
/** Events in one Standard execution's history; an execution that would write more fails. */
export const HISTORY_EVENT_QUOTA = 25_000;

const payloadBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value ?? null));

type EngineExecute = (input: unknown, options: EngineOptions, cleanup: () => void) => Promise<unknown>;
interface EngineOptions {
  eventLogger: { dispatch(event: EngineEvent & { state?: { input?: unknown; output?: unknown } }): void };
  runOptions?: { context?: { Execution?: { Id?: string } } };
}

/**
 * The engine checks no payload size. AWS fails the execution with States.DataLimitExceeded, which no Catch
 * of States.ALL takes, when a state's input or output is over the quota: every state event the engine
 * dispatches is measured as it happens (synchronously, before the next state starts), and `exceeded` ends
 * the execution.
 */
function enforcePayloadLimit(machine: StateMachine, exceeded: (executionArn: string, cause: string) => void): void {
  const engine = machine as unknown as { execute: EngineExecute };
  const execute = engine.execute.bind(machine);
  engine.execute = (input, options, cleanup) => {
    const logger = options.eventLogger;
    const dispatch = logger.dispatch.bind(logger);
    const executionArn = options.runOptions?.context?.Execution?.Id ?? '';
    logger.dispatch = (event) => {
      dispatch(event);
      if (!event.state || (event.type !== 'StateEntered' && event.type !== 'StateExited')) return;
      const entered = event.type === 'StateEntered';
      if (payloadBytes(entered ? event.state.input : event.state.output) <= STATE_PAYLOAD_LIMIT_BYTES) return;
      exceeded(
        executionArn,
        entered
          ? `The state/task '${event.state.name}' has an input with a size exceeding the maximum number of bytes service limit.`
          : `The state/task '${event.state.name}' returned a result with a size exceeding the maximum number of bytes service limit.`,
      );
    };
    return execute(input, options, cleanup);
  };
}

type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'TIMED_OUT';

interface Execution {
  name: string;
  arn: string;
  machineArn: string;
  input: string;
  status: Status;
  startDate: number;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  history: { timestamp: number; type: string; detail?: Record<string, unknown> }[];
  /** History events as Step Functions counts them toward its quota (`HISTORY_EVENT_QUOTA`). */
  events: number;
  abort(): void;
  controller: AbortController;
}

interface PendingToken {
  execution: string;
  settle?: { resolve(value: unknown): void; reject(error: Error): void };
  closed: boolean;
}

type EngineEvent = { type: string; timestamp?: number; state?: { name: string; type: string } };

/** The engine's event log in the shape of Step Functions' GetExecutionHistory (TaskStateEntered, ...). */
function historyEvent(e: EngineEvent): Execution['history'][number] {
  const timestamp = (e.timestamp ?? Date.now()) / 1000;
  if (e.state && (e.type === 'StateEntered' || e.type === 'StateExited')) {
    const entered = e.type === 'StateEntered';
    return {
      timestamp,
      type: `${e.state.type}${e.type}`,
      detail: { [entered ? 'stateEnteredEventDetails' : 'stateExitedEventDetails']: { name: e.state.name } },
    };
  }
  return { timestamp, type: e.type === 'ExecutionTimeout' ? 'ExecutionTimedOut' : e.type };
}

class SfnError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

const Inputs = {
  StartExecution: z.object({ stateMachineArn: z.string(), name: z.string().min(1).max(80).optional(), input: z.string().optional() }),
  DescribeExecution: z.object({ executionArn: z.string() }),
  GetExecutionHistory: z.object({ executionArn: z.string(), reverseOrder: z.boolean().optional() }),
  StopExecution: z.object({ executionArn: z.string(), error: z.string().optional(), cause: z.string().optional() }),
  SendTaskSuccess: z.object({ taskToken: z.string(), output: z.string() }),
  SendTaskFailure: z.object({ taskToken: z.string(), error: z.string().optional(), cause: z.string().optional() }),
  SendTaskHeartbeat: z.object({ taskToken: z.string() }),
};

/**
 * The embedded Step Functions: the deployed ASL file run by aws-local-stepfunctions behind the
 * Step Functions JSON API (the subset the runner uses), so handlers use the real @aws-sdk/client-sfn.
 * Task tokens are minted here, because the engine does not supply `$$.Task.Token`.
 */
export interface LocalMachine {
  name: string;
  definition: string;
  type: 'STANDARD' | 'EXPRESS';
  /** Default: the name in region us-east-1 of account 000000000000. */
  arn?: string;
}

/**
 * May this machine's role invoke this function? `undefined` if so, else AWS's AccessDenied message (the
 * stack built from the template asks IAM; the others allow every invoke).
 */
export type InvokeCheck = (machineArn: string, functionArn: string) => Promise<string | undefined>;

/** What the cost model counts of each finished execution (`npm run cost`). */
export interface ExecutionSummary {
  machine: LocalMachine['type'];
  machineArn: string;
  executionArn: string;
  /** States entered: what Standard workflows bill as state transitions. */
  transitions: number;
  durationMs: number;
  /** The execution's history as the engine records it (`ExecutionStarted`, `TaskStateEntered`, ...), in order. */
  history: { type: string; state?: string }[];
}

export class LocalStepFunctions {
  private readonly executions = new Map<string, Execution>();
  private readonly tokens = new Map<string, PendingToken>();
  private readonly byOperation = new Map<string, AbortController>();
  private readonly finished: string[] = [];
  private static readonly KEEP_FINISHED = 1000;
  private server?: Server;
  /** The first machine's ARN (the Standard lifecycle). */
  readonly stateMachineArn: string;
  private readonly machines = new Map<
    string,
    { machine: StateMachine; definition: { States: Record<string, { Type: string; Resource?: string }> }; type: LocalMachine['type'] }
  >();

  constructor(
    machines: LocalMachine[],
    private readonly functions: Record<string, LocalFunction>,
    private readonly onFinished?: (summary: ExecutionSummary) => void,
    private readonly mayInvoke?: InvokeCheck,
    /**
     * AWS's at-least-once delivery of an Express machine's tasks: told of each Express Task invocation, it may
     * deliver the same payload again (template mode's `duplicate-delivery` fault); the engine uses the first.
     */
    private readonly expressTaskDelivered?: (fn: LocalFunction, payload: unknown) => void,
    private readonly historyEventQuota = HISTORY_EVENT_QUOTA,
  ) {
    for (const m of machines) this.define(m);
    this.stateMachineArn = machines[0].arn ?? this.arnOf(machines[0].name);
  }

  /**
   * A machine's (new) definition, as UpdateStateMachine sets it: executions started from now on run it, and
   * each running one keeps the definition it started with (its run holds its own compiled machine).
   */
  define(m: LocalMachine): void {
    const definition = JSON.parse(m.definition);
    const machine = new StateMachine(definition as never, { validationOptions: { checkArn: true, checkPaths: true } });
    enforcePayloadLimit(machine, (arn, cause) => this.failDataLimit(arn, cause));
    this.machines.set(m.arn ?? this.arnOf(m.name), { machine, definition, type: m.type });
  }

  /** Ends a running execution as AWS does when a payload is over the quota: FAILED, States.DataLimitExceeded. */
  private failDataLimit(arn: string, cause: string): void {
    this.failOnQuota(arn, 'States.DataLimitExceeded', cause);
  }

  /**
   * Counts history events of a Standard execution: past 25,000 it fails, as on AWS. Besides each event the
   * engine logs (states entered and exited), a task adds what Step Functions writes for it: scheduled,
   * started, and succeeded or failed.
   */
  private countEvents(arn: string, events: number): void {
    const e = this.executions.get(arn);
    if (!e || this.machines.get(e.machineArn)?.type !== 'STANDARD') return;
    e.events += events;
    if (e.events > this.historyEventQuota)
      this.failOnQuota(arn, 'States.Runtime', `The execution reached the maximum number of history events (${this.historyEventQuota}).`);
  }

  private failOnQuota(arn: string, error: string, cause: string): void {
    const e = this.executions.get(arn);
    if (e?.status !== 'RUNNING') return;
    e.status = 'FAILED';
    e.error = error;
    e.cause = cause;
    e.stopDate = Date.now() / 1000;
    e.history.push({ timestamp: e.stopDate, type: 'ExecutionFailed', detail: { executionFailedEventDetails: { error: e.error, cause } } });
    e.controller.abort(new Error(cause));
    e.abort();
  }

  arnOf(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:stateMachine:${name}`;
  }

  /** The signal of the operation's current execution: StopExecution aborts its in-flight attempt. */
  abortSignalFor = (operationId: string): AbortSignal | undefined => this.byOperation.get(operationId)?.signal;

  async listen(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const target = String(req.headers['x-amz-target'] ?? '').replace(/^AWSStepFunctions\./, '');
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
          const out = await this.dispatch(target, body);
          res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(JSON.stringify(out));
        } catch (error) {
          const e =
            error instanceof SfnError
              ? error
              : new SfnError(error instanceof z.ZodError ? 'ValidationException' : 'InternalFailure', (error as Error).message);
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(JSON.stringify({ __type: `com.amazonaws.swf.service.v2.model#${e.type}`, message: e.message }));
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const execution of this.executions.values()) if (execution.status === 'RUNNING') execution.abort();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  private async dispatch(action: string, body: unknown): Promise<unknown> {
    switch (action) {
      case 'StartExecution':
        return this.start(Inputs.StartExecution.parse(body)).started;
      case 'StartSyncExecution': {
        const req = Inputs.StartExecution.parse(body);
        if (this.machines.get(req.stateMachineArn)?.type !== 'EXPRESS')
          throw new SfnError('StateMachineTypeNotSupported', 'StartSyncExecution needs an EXPRESS state machine');
        const { started, done } = this.start(req);
        await done;
        const e = this.executions.get(started.executionArn)!;
        return {
          executionArn: e.arn,
          stateMachineArn: req.stateMachineArn,
          name: e.name,
          status: e.status,
          startDate: e.startDate,
          stopDate: e.stopDate,
          input: e.input,
          output: e.output,
          error: e.error,
          cause: e.cause,
        };
      }
      case 'DescribeExecution': {
        const e = this.find(Inputs.DescribeExecution.parse(body).executionArn);
        return {
          executionArn: e.arn,
          stateMachineArn: e.machineArn,
          name: e.name,
          status: e.status,
          startDate: e.startDate,
          stopDate: e.stopDate,
          input: e.input,
          output: e.output,
          error: e.error,
          cause: e.cause,
        };
      }
      case 'GetExecutionHistory': {
        const req = Inputs.GetExecutionHistory.parse(body);
        const events = this.find(req.executionArn).history.map((h, i) => ({
          id: i + 1,
          previousEventId: i,
          timestamp: h.timestamp,
          type: h.type,
          ...h.detail,
        }));
        return { events: req.reverseOrder ? events.reverse() : events };
      }
      case 'StopExecution': {
        const req = Inputs.StopExecution.parse(body);
        const e = this.find(req.executionArn);
        if (e.status === 'RUNNING') {
          e.status = 'ABORTED';
          e.stopDate = Date.now() / 1000;
          e.error = req.error;
          e.cause = req.cause;
          e.controller.abort(new Error('execution stopped'));
          e.abort();
        }
        return { stopDate: e.stopDate };
      }
      case 'SendTaskSuccess': {
        const req = Inputs.SendTaskSuccess.parse(body);
        this.settleToken(req.taskToken).resolve(JSON.parse(req.output));
        return {};
      }
      case 'SendTaskFailure': {
        const req = Inputs.SendTaskFailure.parse(body);
        const error = new Error(req.cause ?? '');
        error.name = req.error ?? 'States.TaskFailed';
        this.settleToken(req.taskToken).reject(error);
        return {};
      }
      case 'SendTaskHeartbeat':
        this.settleToken(Inputs.SendTaskHeartbeat.parse(body).taskToken, false);
        return {};
      default:
        throw new SfnError('UnknownOperationException', `unsupported action ${action}`);
    }
  }

  /**
   * Keeps memory flat however many calls run: a finished execution drops its handles, and only the most
   * recent ones are kept at all (for DescribeExecution and GetExecutionHistory).
   */
  private retire(arn: string): void {
    const e = this.executions.get(arn);
    if (!e) return;
    this.onFinished?.({
      machine: this.machines.get(e.machineArn)?.type ?? 'EXPRESS',
      machineArn: e.machineArn,
      executionArn: arn,
      transitions: e.history.filter((h) => h.type.endsWith('StateEntered')).length,
      durationMs: ((e.stopDate ?? Date.now() / 1000) - e.startDate) * 1000,
      history: e.history.map((h) => {
        const details = (h.detail?.stateEnteredEventDetails ?? h.detail?.stateExitedEventDetails) as { name?: string } | undefined;
        return { type: h.type, state: details?.name };
      }),
    });
    e.abort = () => undefined;
    this.finished.push(arn);
    while (this.finished.length > LocalStepFunctions.KEEP_FINISHED) this.executions.delete(this.finished.shift()!);
  }

  private find(arn: string): Execution {
    const e = this.executions.get(arn);
    if (!e) throw new SfnError('ExecutionDoesNotExist', `execution ${arn} does not exist`);
    return e;
  }

  private settleToken(token: string, close = true): NonNullable<PendingToken['settle']> {
    const pending = this.tokens.get(token);
    if (!pending) throw new SfnError('TaskDoesNotExist', 'task token does not exist');
    if (pending.closed || !pending.settle) throw new SfnError('TaskTimedOut', 'task already closed');
    if (close) pending.closed = true;
    return pending.settle;
  }

  /** Idempotent by name, as on AWS: same name and input returns the running execution; otherwise it exists already. */
  private start(req: z.infer<typeof Inputs.StartExecution>): {
    started: { executionArn: string; startDate: number };
    done: Promise<unknown>;
  } {
    const target = this.machines.get(req.stateMachineArn);
    if (!target) throw new SfnError('StateMachineDoesNotExist', `no state machine ${req.stateMachineArn}`);
    const name = req.name ?? randomBytes(16).toString('hex');
    // Express executions are not unique by name (as on AWS): each gets its own ARN.
    const base = `${req.stateMachineArn.replace(':stateMachine:', target.type === 'EXPRESS' ? ':express:' : ':execution:')}:${name}`;
    const arn = target.type === 'EXPRESS' ? `${base}:${randomBytes(8).toString('hex')}` : base;
    const input = req.input ?? '{}';
    const existing = this.executions.get(arn);
    if (existing) {
      if (existing.status === 'RUNNING' && existing.input === input)
        return { started: { executionArn: arn, startDate: existing.startDate }, done: Promise.resolve() };
      throw new SfnError('ExecutionAlreadyExists', `execution ${name} already exists`);
    }
    const controller = new AbortController();
    const parsedInput = JSON.parse(input);
    const execution: Execution = {
      name,
      arn,
      machineArn: req.stateMachineArn,
      input,
      status: 'RUNNING',
      startDate: Date.now() / 1000,
      history: [],
      events: 0,
      abort: () => undefined,
      controller,
    };
    this.executions.set(arn, execution);
    if (typeof parsedInput?.operationId === 'string') this.byOperation.set(parsedInput.operationId, controller);

    const mintToken = () => {
      const token = randomBytes(24).toString('base64url');
      this.tokens.set(token, { execution: arn, closed: false });
      return token;
    };
    const run = target.machine.run(parsedInput, {
      overrides: { taskResourceLocalHandlers: this.localHandlers(arn, req.stateMachineArn, target.definition) as never },
      context: {
        Execution: { Id: arn, Name: name },
        Task: {
          get Token() {
            return mintToken();
          },
        },
      },
    });
    execution.abort = run.abort;
    void (async () => {
      for await (const event of run.eventLogs) {
        // Failed on a quota: its history ends with that failure, not with the engine's abort.
        if (execution.history.at(-1)?.type === 'ExecutionFailed') continue;
        execution.history.push(historyEvent(event as EngineEvent));
        this.countEvents(arn, 1);
      }
    })().catch(() => undefined);
    const done = run.result
      .then(
        (output) => {
          if (execution.status !== 'RUNNING') return;
          execution.status = 'SUCCEEDED';
          execution.output = JSON.stringify(output);
          execution.stopDate = Date.now() / 1000;
        },
        (error: Error & { cause?: Error }) => {
          if (execution.status !== 'RUNNING') return;
          const inner = error.cause ?? error;
          execution.status =
            error.name === 'ExecutionTimeoutError' ? 'TIMED_OUT' : error.name === 'ExecutionAbortedError' ? 'ABORTED' : 'FAILED';
          execution.error = inner.name;
          execution.cause = inner.message;
          execution.stopDate = Date.now() / 1000;
        },
      )
      .finally(() => {
        for (const [token, pending] of this.tokens)
          if (pending.execution === arn) {
            pending.closed = true;
            this.tokens.delete(token);
          }
        if (this.byOperation.get(parsedInput?.operationId) === controller) this.byOperation.delete(parsedInput.operationId);
        this.retire(arn);
      });
    return { started: { executionArn: arn, startDate: execution.startDate }, done };
  }

  /** lambda:invoke states call the function and mirror AWS's `{ Payload, StatusCode }`; .waitForTaskToken waits for the token. */
  private localHandlers(
    executionArn: string,
    machineArn: string,
    definition: { States: Record<string, { Type: string; Resource?: string }> },
  ): Record<string, (input: unknown) => Promise<unknown>> {
    const handlers: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const [stateName, state] of Object.entries(definition.States)) {
      if (state.Type !== 'Task') continue;
      const waits = state.Resource?.endsWith('.waitForTaskToken');
      handlers[stateName] = async (input) => {
        this.countEvents(executionArn, 3);
        const execution = this.executions.get(executionArn);
        // Failed meanwhile (a payload or the history over its quota): no further state runs.
        if (execution && execution.status !== 'RUNNING') return new Promise(() => undefined);
        const { FunctionName, Payload } = input as { FunctionName: string; Payload: { taskToken?: string } };
        const fn = this.functions[FunctionName];
        if (!fn) throw Object.assign(new Error(`no function ${FunctionName}`), { name: 'Lambda.ResourceNotFoundException' });
        const denied = await this.mayInvoke?.(machineArn, FunctionName);
        if (denied) throw Object.assign(new Error(denied), { name: 'Lambda.AWSLambdaException' });
        const payload = JSON.parse(JSON.stringify(Payload));
        if (!waits) {
          if (this.machines.get(machineArn)?.type === 'EXPRESS') this.expressTaskDelivered?.(fn, JSON.parse(JSON.stringify(Payload)));
          const result = (await fn(payload)) ?? null;
          if (payloadBytes(result) > STATE_PAYLOAD_LIMIT_BYTES) {
            this.failDataLimit(
              executionArn,
              `The state/task '${stateName}' returned a result with a size exceeding the maximum number of bytes service limit.`,
            );
            return new Promise(() => undefined);
          }
          return { Payload: JSON.parse(JSON.stringify(result)), StatusCode: 200 };
        }
        const token = payload.taskToken as string;
        const waiting = new Promise<unknown>((resolve, reject) => {
          const pending = this.tokens.get(token) ?? { execution: executionArn, closed: false };
          pending.settle = { resolve, reject };
          this.tokens.set(token, pending);
        });
        // A decision can arrive while the handler still runs, before the engine awaits `waiting`:
        // mark the rejection handled now so it can never surface as an unhandled rejection.
        waiting.catch(() => undefined);
        await fn(payload);
        return waiting;
      };
    }
    return handlers;
  }
}
