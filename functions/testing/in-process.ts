import { AsyncLocalStorage } from 'node:async_hooks';
import { memoryStore } from '../adapters/memory-store';
import { deliveredEnvelope } from '../api/deliver';
import { createRun, submitToolCall } from '../commands/submit';
import type { Envelope } from '../core/envelope';
import { RunnerError } from '../core/errors';
import type { OperationRecord, Principal, RunRecord } from '../core/model';
import { nextStep } from '../core/next-step';
import type { Deps } from '../core/ports';
import { makeRegistry, type ToolContext, type ToolSpec } from '../core/tool-spec';
import type { TraceEvent } from '../core/trace';
import { expireApprovalStep } from '../steps/approval';
import { executeAttempt } from '../steps/execute';
import { reconcileOutcome } from '../steps/reconcile';
import { reportEnvelope } from '../steps/report';
import { routeByRecord } from '../steps/route';
import type { FetchScope } from './faults';

/** What one call may change about how its steps run: its requests' fetch, and a second delivery of its first attempt. */
export interface CallHooks {
  fetchFor(scope: FetchScope): typeof fetch;
  /** The engine runs the step that sends the first attempt twice at once, as a duplicated invocation would. */
  secondDelivery?: boolean;
  /** Told of each `execute` as it starts: when it settles, what it returned (or threw) and how long it ran. */
  watchExecute?(settled: Promise<ExecuteSettled>): void;
}

/** One `execute` as it ended, whether or not the runner still waited for it. */
export type ExecuteSettled = ({ ok: true; value: unknown } | { ok: false; error: unknown }) & { elapsedMs: number };

/** What a call ended with. */
export interface CallOutcome {
  envelope: Envelope;
  trace: TraceEvent[];
  operation: OperationRecord;
}

/** Raised when a call needs what the in-process runner does not do (a person's approval). */
export class InProcessRunnerError extends RunnerError {
  override name = 'InProcessRunnerError';
}

const AGENT: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
/** More steps than any lifecycle takes (ten failed lookups, retries, grace waits): a loop here is a bug. */
const MAX_STEPS = 500;

/**
 * The runner's lifecycle in this process: the same submission, steps and engine as a deployment, over the
 * in-memory store, with the steps run one after another as the state machine would run them. Waits
 * (backoff, Retry-After, the late-request grace) move a virtual clock instead of sleeping; a tool's own
 * `timeoutMs` is real time. Each tool's `ctx.fetch` is the one the current call's hooks give.
 */
export function inProcessRunner(tools: ToolSpec[]) {
  let offset = 0;
  const now = () => Date.now() + offset;
  const store = memoryStore(now);
  const hooks = new AsyncLocalStorage<CallHooks>();
  const withFetch = (ctx: ToolContext, phase: FetchScope['phase']): ToolContext => {
    const current = hooks.getStore();
    if (!current) return ctx;
    return { ...ctx, fetch: current.fetchFor({ phase, idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }) };
  };
  const wrapped = tools.map(
    (tool): ToolSpec => ({
      ...tool,
      execute: (ctx, input) => {
        const started = performance.now();
        const running = tool.execute(withFetch(ctx, 'execute'), input);
        hooks.getStore()?.watchExecute?.(
          running.then(
            (value): ExecuteSettled => ({ ok: true, value, elapsedMs: performance.now() - started }),
            (error): ExecuteSettled => ({ ok: false, error, elapsedMs: performance.now() - started }),
          ),
        );
        return running;
      },
      ...(tool.reconcile ? { reconcile: (ctx, input) => tool.reconcile!(withFetch(ctx, 'reconcile'), input) } : {}),
    }),
  );
  const blobs = new Map<string, string>();
  const deps: Deps = {
    store,
    blobs: { put: async (key, text) => void blobs.set(key, text), get: async (key) => blobs.get(key) },
    tools: makeRegistry(wrapped),
    config: async () => ({
      principals: [{ id: AGENT.id, key: 'k'.repeat(32), roles: ['agent'], tools: '*' }],
      approvalSecret: 's'.repeat(32),
      approvalTtlSeconds: 600,
    }),
    lifecycle: {
      start: async () => undefined,
      stop: async () => undefined,
      sendTaskSuccess: async () => undefined,
      sendTaskFailure: async () => undefined,
    },
    notifier: { approvalRequested: async () => undefined },
    now,
    random: Math.random,
    publicBaseUrl: 'http://toolrunner.test',
  };
  let run: RunRecord | undefined;
  const waitUntil = (op: OperationRecord) => {
    const notBefore = op.plan?.notBefore ? Date.parse(op.plan.notBefore) : 0;
    if (notBefore > now()) offset += notBefore - now();
  };

  async function drive(operationId: string, secondDelivery: boolean): Promise<OperationRecord> {
    let duplicate = secondDelivery;
    for (let i = 0; i < MAX_STEPS; i++) {
      const op = (await store.getOperation(operationId))!;
      const next = nextStep(op, now());
      switch (next) {
        case 'done':
          return op;
        case 'validate':
          await routeByRecord(deps, operationId);
          break;
        case 'await_approval':
          throw new InProcessRunnerError(
            `the call to ${op.toolName} needs a person's approval, which the in-process runner does not give: choose arguments that need none`,
          );
        case 'expire_approval':
          await expireApprovalStep(deps, operationId);
          break;
        case 'execute':
        case 'retry': {
          waitUntil(op);
          const out = duplicate
            ? (await Promise.all([executeAttempt(deps, operationId), executeAttempt(deps, operationId)]))[0].output
            : (await executeAttempt(deps, operationId)).output;
          duplicate = false;
          // A delivery that found another at work asks to look again later: the clock moves on, nothing sleeps.
          if (out.next === 'retry' && out.delaySeconds) offset += out.delaySeconds * 1000;
          break;
        }
        case 'reconcile':
        case 'reconcile_later':
          waitUntil(op);
          await reconcileOutcome(deps, operationId);
          break;
        case 'report':
          await reportEnvelope(deps, operationId);
          break;
      }
    }
    throw new InProcessRunnerError(`operation ${operationId} did not settle within ${MAX_STEPS} steps`);
  }

  return {
    deps,
    store,
    now,
    /** Submits one call and runs its lifecycle to the end; `hooks` decide its fetch and deliveries. */
    async call(toolName: string, args: unknown, callId: string, callHooks: CallHooks): Promise<CallOutcome> {
      run ??= await createRun(deps, AGENT, {
        maxToolCalls: 1_000_000,
        maxTurns: 1_000_000,
        maxSpendCents: 1e12,
        maxWallClockSeconds: 86_400 * 365,
      });
      const current = run;
      return hooks.run(callHooks, async () => {
        const submitted = await submitToolCall(deps, (await store.getRun(current.runId))!, AGENT, {
          callId,
          turn: 1,
          name: toolName,
          arguments: args,
        });
        if (submitted.kind !== 'created' && submitted.kind !== 'replayed')
          throw new InProcessRunnerError(`the call ${callId} was not taken: ${submitted.kind}`);
        const operation = await drive(submitted.op.operationId, callHooks.secondDelivery === true);
        const trace = (await store.listEvents(current.runId)).filter((e) => e.operationId === operation.operationId);
        return { envelope: (await deliveredEnvelope(deps, operation))!, trace, operation };
      });
    },
  };
}
