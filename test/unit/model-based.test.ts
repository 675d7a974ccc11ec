import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { signLink } from '../../functions/core/approval-link';
import { nextStep } from '../../functions/core/next-step';
import { isActive } from '../../functions/core/record-predicates';
import { TransportError, UpstreamHttpError } from '../../functions/core/errors';
import { approvalIdFor } from '../../functions/core/ids';
import type { OperationRecord, Principal, RunRecord } from '../../functions/core/model';
import type { Deps, LifecyclePort, Store } from '../../functions/core/ports';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import { decideApproval } from '../../functions/commands/approval-decisions';
import { expireApprovalStep, requestApproval } from '../../functions/steps/approval';
import { cancelOperation, cancelRun, resolveOperation } from '../../functions/commands/cancel';
import { executeAttempt } from '../../functions/steps/execute';
import { reconcileOutcome } from '../../functions/steps/reconcile';
import { reportEnvelope } from '../../functions/steps/report';
import { routeByRecord } from '../../functions/steps/route';
import { sweep } from '../../functions/steps/resume';
import { recentRuns } from '../../functions/steps/recent-runs';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import { memoryStore } from '../support/memory-store';
import { compilePolicies } from '../../functions/adapters/cedar-policies';
import type { TraceEvent } from '../../functions/core/trace';

/**
 * Model-based tests of the lifecycle engine: random interleavings of submissions (with duplicates and
 * conflicts), steps, crashes at any write, cancels, approvals, rejections, expiry, resumes by the sweeper
 * and reviews, over the in-memory store and upstreams that fail in every way the error matrix knows.
 * Seeded and replayable: MODEL_SEED and MODEL_RUNS (default 10,000) in the environment.
 */
const SEED = Number(process.env.MODEL_SEED ?? 20261130);
const RUNS = Number(process.env.MODEL_RUNS ?? 10_000);

type Fault = 'ok' | 'fail_503' | 'commit_then_lost' | 'lost_before' | 'rate_limited' | 'commit_late' | 'commit_much_later';
const FAULTS: Fault[] = [
  'ok',
  'ok',
  'ok',
  'fail_503',
  'commit_then_lost',
  'lost_before',
  'rate_limited',
  'commit_late',
  'commit_much_later',
];
/** A late request lands within this long of being sent: less than the tools' timeout (1 s). */
const LANDS_WITHIN_MS = 900;

/**
 * The upstream: effects by operation, deduplicated by idempotency key where the tool sends one. A request
 * may be overtaken on its way: it times out at once and takes effect later, when the upstream gets its
 * second request after it (`commit_late`) or only once LANDS_WITHIN_MS have passed (`commit_much_later`),
 * so the lookups and retries between find nothing. What is still on its way at the end lands then.
 */
class Upstream {
  effects = new Map<string, number>();
  byKey = new Map<string, { id: string }>();
  faults: Fault[] = [];
  late: { opKey: string; idempotencyKey?: string; sentAt: number; overtakenBy: number; overtakable: boolean }[] = [];
  constructor(readonly now: () => number) {}
  next(): Fault {
    return this.faults.shift() ?? 'ok';
  }
  /** A request arrives: the late ones due by now take effect first. */
  receive(): void {
    for (const request of this.late) request.overtakenBy++;
    const due = (r: (typeof this.late)[number]) => (r.overtakable && r.overtakenBy >= 2) || this.now() >= r.sentAt + LANDS_WITHIN_MS;
    const landing = this.late.filter(due);
    this.late = this.late.filter((r) => !due(r));
    for (const r of landing) this.commit(r.opKey, r.idempotencyKey);
  }
  landAll(): void {
    for (const r of this.late) this.commit(r.opKey, r.idempotencyKey);
    this.late = [];
  }
  commit(opKey: string, idempotencyKey?: string): { id: string } {
    if (idempotencyKey && this.byKey.has(idempotencyKey)) return this.byKey.get(idempotencyKey)!;
    const result = { id: `fx_${this.effects.size + 1}` };
    this.effects.set(opKey, (this.effects.get(opKey) ?? 0) + 1);
    if (idempotencyKey) this.byKey.set(idempotencyKey, result);
    return result;
  }
}

// Built once: zod compiles each schema on first use, and the schemas do not depend on the schedule.
const Out = z.object({ id: z.string() });
const Ref = z.object({ ref: z.string() });
const Payment = z.object({ ref: z.string(), amount: z.number().int() });
const Move = z.object({ ref: z.string(), to: z.string() });

function tools(up: Upstream): ToolSpec[] {
  const act = (opKey: (input: any) => string, keyed: boolean) => async (ctx: { idempotencyKey: string }, input: any) => {
    up.receive();
    const fault = up.next();
    if (fault === 'commit_late' || fault === 'commit_much_later') {
      const idempotencyKey = keyed ? ctx.idempotencyKey : undefined;
      up.late.push({ opKey: opKey(input), idempotencyKey, sentAt: up.now(), overtakenBy: 0, overtakable: fault === 'commit_late' });
      throw new TransportError('timeout', true, 'no answer yet');
    }
    if (fault === 'lost_before') throw new TransportError('reset', true, 'connection reset');
    if (fault === 'fail_503') throw new UpstreamHttpError(503, undefined, undefined, 'unavailable');
    if (fault === 'rate_limited') throw new UpstreamHttpError(429, undefined, 1, 'slow down');
    const result = up.commit(opKey(input), keyed ? ctx.idempotencyKey : undefined);
    if (fault === 'commit_then_lost') throw new TransportError('timeout', true, 'no answer');
    return result;
  };
  return [
    {
      name: 'pay',
      description: 'idempotent charge',
      inputSchema: Payment,
      outputSchema: Out,
      risk: 'irreversible_write',
      timeoutMs: 1000,
      maxAttempts: 3,
      supportsIdempotency: true,
      approval: (i: { amount: number }) => i.amount >= 50,
      execute: act((i) => i.ref, true),
      reconcile: async (ctx) => {
        up.receive();
        return up.byKey.has(ctx.idempotencyKey) ? { found: true, result: up.byKey.get(ctx.idempotencyKey)! } : { found: false };
      },
    },
    {
      name: 'mail',
      description: 'no idempotency',
      inputSchema: Ref,
      outputSchema: Out,
      risk: 'irreversible_write',
      timeoutMs: 1000,
      maxAttempts: 1,
      supportsIdempotency: false,
      approval: 'never',
      execute: act((i) => i.ref, false),
    },
    {
      name: 'move',
      description: 'locked write',
      inputSchema: Move,
      outputSchema: Out,
      risk: 'reversible_write',
      timeoutMs: 1000,
      maxAttempts: 2,
      supportsIdempotency: true,
      approval: 'never',
      lockKey: () => 'order_1',
      execute: act((i) => i.ref, true),
    },
    {
      name: 'read',
      description: 'a read',
      inputSchema: Ref,
      outputSchema: Out,
      risk: 'read',
      timeoutMs: 1000,
      maxAttempts: 3,
      supportsIdempotency: false,
      approval: 'never',
      execute: act((i) => `read:${i.ref}`, false),
    },
  ] as ToolSpec[];
}

const CALLS = [
  { name: 'pay', arguments: { ref: 'p1', amount: 10 } },
  { name: 'pay', arguments: { ref: 'p2', amount: 90 } },
  { name: 'mail', arguments: { ref: 'm1' } },
  { name: 'move', arguments: { ref: 'v1', to: 'A' } },
  { name: 'move', arguments: { ref: 'v2', to: 'B' } },
  { name: 'read', arguments: { ref: 'r1' } },
  { name: 'nope', arguments: {} },
  { name: 'pay', arguments: { ref: 'p3', amount: 'x' } },
  // Under POLICIES: over the cap (refused), and over the unattended limit but under the tool's own (a person).
  { name: 'pay', arguments: { ref: 'p4', amount: 500 } },
  { name: 'pay', arguments: { ref: 'p5', amount: 30 } },
];

/** Half the schedules run under these policies, the clock starting two minutes before pay closes. */
const POLICIES = `
@id("agents-call") permit(principal, action in Action::"call", resource);
@id("pay-cap") forbid(principal, action == Action::"pay", resource) when { context.input.amount > 100 };
@id("pay-closes-at-14") forbid(principal, action == Action::"pay", resource) when { context.now.hour >= 14 };
@id("unattended-others") permit(principal, action in [Action::"mail:unattended", Action::"move:unattended", Action::"read:unattended"], resource);
@id("unattended-small-pay") permit(principal, action == Action::"pay:unattended", resource) when { context.input.amount <= 20 };
`;
const PAY_CLOSES_AT = Date.parse('2026-11-30T14:00:00Z');
const compiledPolicies = compilePolicies(POLICIES, tools(new Upstream(() => 0)), []);
if (!compiledPolicies.ok) throw new Error(JSON.stringify(compiledPolicies.problems));
const policyEvaluator = compiledPolicies.evaluator;

type Action =
  | { kind: 'submit'; call: number; conflicting: boolean; process: number }
  | { kind: 'step'; call: number }
  | { kind: 'crash'; call: number; atWrite: number }
  | { kind: 'cancel'; call: number; wholeRun: boolean }
  | { kind: 'decide'; call: number; approve: boolean }
  | { kind: 'tick'; seconds: number }
  | { kind: 'sweep' }
  | { kind: 'fault'; fault: Fault };

const call = fc.integer({ min: 0, max: CALLS.length - 1 });
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      call,
      conflicting: fc.constantFrom(false, false, false, false, false, true),
      // Which of two API processes takes it: each admits on the run it remembers, which the other moves on.
      process: fc.constantFrom(0, 1),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('step' as const), call }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const), call, atWrite: fc.integer({ min: 0, max: 2 }) }) },
  {
    weight: 1,
    // Now and then the run itself, late or early: every later call must then answer run_closed.
    arbitrary: fc.record({
      kind: fc.constant('cancel' as const),
      call,
      wholeRun: fc.constantFrom(false, false, false, false, false, false, false, true),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('decide' as const), call, approve: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), seconds: fc.constantFrom(1, 5, 30, 120, 4000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fault' as const), fault: fc.constantFrom(...FAULTS) }) },
);

class Crash extends Error {}

/** A store that dies at its n-th write: the step's effects so far happened, its later writes never do. */
function crashing(store: Store, atWrite: number): Store {
  let writes = 0;
  const maybeCrash = () => {
    if (writes++ === atWrite) throw new Crash('the process died');
  };
  return {
    ...store,
    async updateOperation(before, after, events) {
      maybeCrash();
      return store.updateOperation(before, after, events);
    },
  };
}

const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const SECRET = 'model-secret-0123456789abcdef';

async function scenario(actions: Action[], underPolicies: boolean): Promise<void> {
  let clock = Date.parse(underPolicies ? '2026-11-30T13:58:00Z' : '2026-11-30T12:00:00Z');
  const store = memoryStore(() => clock);
  const up = new Upstream(() => clock);
  /** Operations with a live execution (Step Functions would be driving them). */
  const driven = new Set<string>();
  const lifecycle: LifecyclePort = {
    async start(input) {
      driven.add(input.operationId);
    },
    async stop(name) {
      driven.delete(name.replace(/-r\d+$/, ''));
    },
    async sendTaskSuccess() {},
    async sendTaskFailure() {},
  };
  const base: Deps = {
    store,
    tools: makeRegistry(tools(up)),
    config: async () => ({
      principals: [
        { id: 'agent', key: 'k'.repeat(16), roles: ['agent'], tools: '*' },
        { id: 'approver', key: 'a'.repeat(16), roles: ['approver'], tools: [] },
        { id: 'reviewer', key: 'r'.repeat(16), roles: ['reviewer'], tools: [] },
      ],
      approvalSecret: SECRET,
      approvalTtlSeconds: 600,
    }),
    lifecycle,
    notifier: { approvalRequested: async () => undefined },
    now: () => clock,
    random: () => 0.5,
    publicBaseUrl: 'http://runner',
    ...(underPolicies ? { policies: async () => policyEvaluator } : {}),
  };
  const run: RunRecord = await createRun(base, agent, {
    maxToolCalls: 6,
    maxTurns: 50,
    maxSpendCents: 1_000_000,
    maxWallClockSeconds: 7200,
  });
  const submitted = new Map<number, string>();
  /** The turn of each call the run admitted (the others were created exhausted). */
  const admittedTurns: number[] = [];
  const apis: Deps[] = [0, 1].map(() => ({ ...base, recentRuns: recentRuns({ now: () => clock }) }));

  /** Runs the step the record names, as Step Functions would for a live execution. */
  async function step(deps: Deps, operationId: string): Promise<void> {
    const op = (await store.getOperation(operationId))!;
    if (!driven.has(operationId)) return;
    const next = nextStep(op, clock);
    switch (next) {
      case 'validate':
        await routeByRecord(deps, operationId);
        return;
      case 'await_approval':
        if (op.state === 'validated' || !op.approvalTaskToken) await requestApproval(deps, operationId, `tok_${operationId}_${clock}`);
        return;
      case 'expire_approval':
        await expireApprovalStep(deps, operationId);
        return;
      case 'execute':
      case 'retry':
        if (next === 'retry' && op.plan?.notBefore && Date.parse(op.plan.notBefore) > clock) clock = Date.parse(op.plan.notBefore);
        await executeAttempt(deps, operationId);
        return;
      case 'reconcile':
      case 'reconcile_later':
        if (op.plan?.notBefore && Date.parse(op.plan.notBefore) > clock) clock = Date.parse(op.plan.notBefore);
        await reconcileOutcome(deps, operationId);
        return;
      case 'report':
        await reportEnvelope(deps, operationId);
        return;
      case 'done':
        driven.delete(operationId);
    }
  }

  for (const a of actions) {
    const opId = 'call' in a ? submitted.get(a.call) : undefined;
    switch (a.kind) {
      case 'submit': {
        const c = CALLS[a.call];
        const args = a.conflicting ? { ...c.arguments, extra: 1 } : c.arguments;
        const api = apis[a.process];
        const cancelled = (await store.getRun(run.runId))!.status === 'cancelled';
        const out = await submitToolCall(api, api.recentRuns?.get(run.runId) ?? (await store.getRun(run.runId))!, agent, {
          callId: `call_${a.call}`,
          turn: 1 + (a.call % 3),
          name: c.name,
          arguments: args,
        });
        // A cancelled run takes no new call, whatever a process remembers of it (a call it had still answers).
        if (cancelled) expect(['run_closed', 'replayed', 'conflict']).toContain(out.kind);
        if (out.kind === 'created') submitted.set(a.call, out.op.operationId);
        if (out.kind === 'created' && out.op.envelope?.status !== 'budget_exhausted') admittedTurns.push(out.op.turn);
        if (out.kind === 'replayed') expect(submitted.get(a.call)).toBe(out.op.operationId);
        break;
      }
      case 'step':
        if (opId) await step(base, opId);
        break;
      case 'crash':
        if (opId && driven.has(opId)) {
          await step({ ...base, store: crashing(store, a.atWrite) }, opId).catch((e) => {
            if (!(e instanceof Crash)) throw e;
            driven.delete(opId);
          });
        }
        break;
      case 'cancel':
        if (a.wholeRun) await cancelRun(base, (await store.getRun(run.runId))!);
        else if (opId) await cancelOperation(base, (await store.getOperation(opId))!);
        break;
      case 'decide':
        if (opId) {
          const op = (await store.getOperation(opId))!;
          if (op.approval) {
            const sig = signLink(SECRET, {
              approvalId: approvalIdFor(opId),
              approverId: 'approver',
              expiresAt: Date.parse(op.approval.expiresAt),
              inputHash: op.inputHash,
            });
            await decideApproval(base, approvalIdFor(opId), sig, a.approve ? 'approve' : 'reject');
          }
        }
        break;
      case 'tick':
        clock += a.seconds * 1000;
        break;
      case 'sweep':
        await sweep(base, 100);
        break;
      case 'fault':
        up.faults.push(a.fault);
        break;
    }
  }

  // Drain: no more faults; time passes, the sweeper runs, executions go on, reviewers resolve nothing yet.
  up.faults = [];
  for (let round = 0; round < 60; round++) {
    const ops = [...store.ops.values()];
    if (ops.every((o) => !isActive(o) || (o.review?.required && o.envelope))) break;
    for (const o of ops) {
      if (o.state === 'awaiting_approval' && o.approval?.state === 'pending' && round > 3)
        clock = Math.max(clock, Date.parse(o.approval.expiresAt));
      await step(base, o.operationId);
    }
    if (round % 4 === 3) {
      clock += 10 * 60_000;
      await sweep(base, 100);
    }
  }

  // Whatever is still on its way lands now: the runner must already have said so, or left it to a person.
  up.landAll();
  const ops = [...store.ops.values()];
  const events = store.events.get(run.runId) ?? [];
  const finalRun = store.runs.get(run.runId)!;
  for (const o of ops) {
    const ref = (JSON.parse((o.frozenArguments ?? o.rawArguments)!) as { ref?: string }).ref ?? '';
    const effects = up.effects.get(ref) ?? 0;
    // An effect at most once per operation.
    expect(effects, `${o.toolName} ${ref} effects`).toBeLessThanOrEqual(1);
    // Every operation reaches reported, or an open review whose envelope the model already has; none is left watched.
    expect(o.state === 'reported' || Boolean(o.review?.required && o.envelope), `${o.operationId} ends ${o.state}`).toBe(true);
    expect(!isActive(o) || Boolean(o.review?.required), `${o.operationId} still active`).toBe(true);
    // A committed effect is always recorded: as the result, as a late result, or in front of a person.
    if (effects > 0 && o.toolName !== 'read') {
      const kept = o.outcome?.kind === 'succeeded' || o.lateOutcome?.kind === 'succeeded' || Boolean(o.review?.required);
      expect(kept, `${o.operationId} (${o.toolName}) committed but ${o.state}/${o.outcome?.kind}`).toBe(true);
    }
    // Success is reported only for what happened.
    if (o.envelope?.status === 'succeeded' && o.toolName !== 'read') expect(effects).toBe(1);
    if (underPolicies) policyInvariants(o, effects, events);
  }
  // Budgets never exceeded, and every call admitted counted once, whichever process admitted it on what it remembered.
  expect(finalRun.usage.toolCalls).toBeLessThanOrEqual(finalRun.budgets.maxToolCalls);
  expect(finalRun.usage.toolCalls).toBe(admittedTurns.length);
  expect(finalRun.lastTurn).toBe(Math.max(0, ...admittedTurns));
  // Trace: seq strictly increasing per run.
  for (let i = 1; i < events.length; i++) expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
  // Cross-check: a resolver can settle every open review (the door a person uses stays open).
  for (const o of ops.filter((x: OperationRecord) => x.review?.required)) {
    expect((await resolveOperation(base, o, { id: 'reviewer', roles: ['reviewer'], tools: [] }, 'failed', 'checked')).ok).toBe(true);
  }
}

/** What POLICIES promise, whatever the interleaving: the cap, the closing hour (re-checked before every attempt), the approvals they add. */
function policyInvariants(o: OperationRecord, effects: number, events: TraceEvent[]): void {
  const amount = (JSON.parse((o.frozenArguments ?? o.rawArguments)!) as { amount?: unknown }).amount;
  if (o.toolName !== 'pay' || typeof amount !== 'number') return;
  const decided = o.outcome?.kind !== 'budget_exhausted' && o.outcome?.kind !== 'cancelled';
  // Over the cap: refused at submission by the policy that says so, never sent.
  if (amount > 100) {
    expect(effects, `${o.operationId} over the cap`).toBe(0);
    if (decided) expect(o.outcome).toMatchObject({ kind: 'rejected', code: 'forbidden', message: expect.stringContaining('"pay-cap"') });
  }
  // Over the unattended limit: a person approved whatever took effect.
  if (amount > 20 && effects > 0) expect(o.approval?.state, `${o.operationId} ran unattended`).toBe('approved');
  // No attempt of a pay starts once pay has closed: the re-check before each attempt evaluates again.
  for (const e of events)
    if (e.operationId === o.operationId && e.type === 'attempt.started')
      expect(Date.parse(e.at), `${o.operationId} attempted at ${e.at}`).toBeLessThan(PAY_CLOSES_AT);
  // Every call the policies decided names the policies that decided it.
  if (decided) expect(o.policies?.call.length, `${o.operationId} names no policy`).toBeGreaterThan(0);
}

describe('the lifecycle under any interleaving (model-based)', () => {
  it(`keeps its invariants over ${RUNS} random schedules, half of them under Cedar policies (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 5, maxLength: 40 }), fc.boolean(), async (actions, underPolicies) => {
        // The in-memory store never leaves the microtask queue: one event-loop turn per schedule lets the
        // worker answer vitest, which otherwise times out talking to a busy machine's worker.
        await new Promise((resolve) => setImmediate(resolve));
        await scenario(actions, underPolicies);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
  }, 600_000);
});

/**
 * Rate limits under any interleaving of concurrent submissions (fast-check's scheduler decides the order in
 * which every store call answers): at most `perMinute` calls of the limited tool and at most `concurrent` in
 * flight are admitted, the counts given back leave each counter equal to what was admitted, a throttled call
 * creates nothing and uses no budget, and a replay of an admitted call is never throttled.
 */
describe('rate limits under any interleaving (model-based)', () => {
  const PER_MINUTE = 3;
  const CONCURRENT = 4;
  const submission = fc.record({
    call: fc.integer({ min: 0, max: 7 }),
    caller: fc.constantFrom('agent', 'agent2'),
  });
  const toolOf = (call: number) => (call % 2 ? 'limited' : 'free');

  it('admits at most the limits, counts exactly, never throttles a replay', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(submission, { minLength: 1, maxLength: 12 }),
        fc.array(submission, { maxLength: 8 }),
        async (s, first, later) => {
          const clock = Date.parse('2026-11-30T12:00:10Z');
          const store = memoryStore(() => clock);
          const scheduled: Store = { ...store };
          for (const name of [
            'getOperation',
            'getRun',
            'createOperation',
            'appendRunEvents',
            'takeRateCount',
            'giveBackRateCount',
            'takeRateSlot',
            'giveBackRateSlot',
          ] as const)
            (scheduled as any)[name] = s.scheduleFunction((store as any)[name]);
          const tool = (name: string): ToolSpec => ({
            name,
            description: name,
            inputSchema: z.strictObject({ n: z.number() }),
            outputSchema: z.object({}),
            risk: 'read',
            supportsIdempotency: true,
            timeoutMs: 1000,
            maxAttempts: 1,
            approval: 'never',
            execute: async () => ({}),
          });
          const deps: Deps = {
            store: scheduled,
            tools: makeRegistry([tool('free'), tool('limited')]),
            config: async () => ({
              principals: [
                { id: 'agent', key: 'k'.repeat(16), roles: ['agent'], tools: '*' },
                { id: 'agent2', key: 'l'.repeat(16), roles: ['agent'], tools: '*' },
              ],
              approvalSecret: SECRET,
              approvalTtlSeconds: 600,
              rateLimits: [
                { tool: 'limited', perMinute: PER_MINUTE },
                { principal: '*', concurrent: CONCURRENT },
              ],
            }),
            lifecycle: {
              start: async () => undefined,
              stop: async () => undefined,
              sendTaskSuccess: async () => {},
              sendTaskFailure: async () => {},
            },
            notifier: { approvalRequested: async () => undefined },
            now: () => clock,
            random: () => 0.5,
            publicBaseUrl: 'http://runner',
          };
          const run = await createRun({ ...deps, store }, agent, { maxToolCalls: 100, maxTurns: 100, maxWallClockSeconds: 7200 });
          const submitAll = async (batch: { call: number; caller: string }[]) => {
            const out = batch.map((b) =>
              submitToolCall(
                deps,
                run,
                { id: b.caller, roles: ['agent'], tools: '*' },
                {
                  callId: `call_${b.call}`,
                  turn: 1,
                  name: toolOf(b.call),
                  arguments: { n: b.call },
                },
              ).then((result) => ({ ...b, result })),
            );
            return s.waitFor(Promise.all(out));
          };

          await submitAll(first);
          const admittedBefore = new Set([...store.ops.values()].map((o) => o.callId));
          const second = await submitAll([...[...admittedBefore].map((id) => ({ call: Number(id.slice(5)), caller: 'agent' })), ...later]);

          const ops = [...store.ops.values()];
          // At most the limits: nothing settles here, so every operation is in flight.
          expect(ops.filter((o) => o.toolName === 'limited').length).toBeLessThanOrEqual(PER_MINUTE);
          for (const caller of ['agent', 'agent2'])
            expect(ops.filter((o) => o.requestedBy === caller).length).toBeLessThanOrEqual(CONCURRENT);
          // Exact counts: what a lost race or a throttled call took was given back.
          const minuteCount = [...store.rateCounts.entries()].find(([key]) => key.includes('tool.is=limited'))?.[1] ?? 0;
          expect(minuteCount).toBe(ops.filter((o) => o.toolName === 'limited').length);
          const slots = [...store.rateSlots.entries()];
          // Every operation holds exactly one slot, its own: none was freed by a duplicate that lost the create.
          expect(slots.map(([, held]) => held.holder.split('.')[0]).sort()).toEqual(ops.map((o) => o.operationId).sort());
          for (const [key, held] of slots)
            expect(store.ops.get(held.holder.split('.')[0])?.rateSlots).toEqual({ holder: held.holder, keys: [key] });
          // No budget for what was throttled; a replay of an admitted call is answered, never throttled.
          expect(store.runs.get(run.runId)!.usage.toolCalls).toBe(ops.length);
          for (const { call, result } of second)
            if (admittedBefore.has(`call_${call}`)) expect(result.kind, `call_${call}`).toBe('replayed');
          for (const { call, result } of [...second]) if (result.kind === 'throttled') expect(store.ops.has(`call_${call}`)).toBe(false);
        },
      ),
      // A hundredth of MODEL_RUNS: each schedule is a few dozen store calls, interleaved by the scheduler.
      { numRuns: Math.max(50, Math.round(RUNS / 100)), seed: SEED, endOnFailure: true },
    );
  });
});
