import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { nextStep } from '../../functions/core/next-step';
import { TransportError, UpstreamHttpError } from '../../functions/core/errors';
import type { Principal } from '../../functions/core/model';
import type { ToolSpec } from '../../functions/core/tool-spec';
import type { TraceEvent } from '../../functions/core/trace';
import { cancelOperation } from '../../functions/commands/cancel';
import { executeAttempt } from '../../functions/steps/execute';
import { reconcileOutcome } from '../../functions/steps/reconcile';
import { reportEnvelope } from '../../functions/steps/report';
import { routeByRecord } from '../../functions/steps/route';
import { createRun, submitToolCall } from '../../functions/commands/submit';
import { coreDeps, memoryStore } from '../support/memory-store';

/**
 * A request that timed out can still take effect after the status lookup found nothing (it was overtaken
 * on its way). If the retries that follow then fail, the failure is not recorded on their word: the
 * runner looks once more (or, without a lookup, asks a person). Traced on the pure core, with an upstream
 * that holds a request and lets it land when its second later request arrives.
 */

type Answer = 'ok' | 'late' | 'lost' | '429' | '503';

class Upstream {
  charges = new Map<string, { id: string }>();
  answers: Answer[] = [];
  held: { key: string; overtakenBy: number }[] = [];
  requests: string[] = [];
  receive(what: string): void {
    this.requests.push(what);
    for (const r of this.held) r.overtakenBy++;
    for (const r of this.held.filter((h) => h.overtakenBy >= 2)) this.commit(r.key);
    this.held = this.held.filter((h) => h.overtakenBy < 2);
  }
  commit(key: string): { id: string } {
    if (!this.charges.has(key)) this.charges.set(key, { id: `ch_${this.charges.size + 1}` });
    return this.charges.get(key)!;
  }
  async act(key: string): Promise<{ id: string }> {
    this.receive('POST');
    const answer = this.answers.shift() ?? 'ok';
    if (answer === 'late' || answer === 'lost') {
      if (answer === 'late') this.held.push({ key, overtakenBy: 0 });
      throw new TransportError('timeout', true, 'no answer within the timeout');
    }
    if (answer === '429') throw new UpstreamHttpError(429, undefined, 1, 'slow down');
    if (answer === '503') throw new UpstreamHttpError(503, undefined, undefined, 'unavailable');
    return this.commit(key);
  }
}

const Charge = z.strictObject({ amount: z.number().int() });
const Out = z.object({ id: z.string() });
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };

function harness(withLookup: boolean) {
  let clock = Date.parse('2026-12-02T12:00:00Z');
  const store = memoryStore(() => clock);
  const up = new Upstream();
  const charge: ToolSpec = {
    name: 'charge',
    description: 'a charge',
    inputSchema: Charge,
    outputSchema: Out,
    risk: 'irreversible_write',
    timeoutMs: 1000,
    maxAttempts: 3,
    supportsIdempotency: true,
    approval: 'never',
    execute: (ctx) => up.act(ctx.idempotencyKey),
    ...(withLookup
      ? {
          reconcile: async (ctx: { idempotencyKey: string }) => {
            up.receive('GET');
            const found = up.charges.get(ctx.idempotencyKey);
            return found ? { found: true as const, result: found } : { found: false as const };
          },
        }
      : {}),
  } as ToolSpec;
  const deps = coreDeps(store, [charge], () => clock);

  /** Submits one charge and runs the steps its record names, as the state machine would, to its envelope. */
  async function run(answers: Answer[], cancelAfterAttempt?: number) {
    up.answers = answers;
    const created = await createRun(deps, agent, { maxToolCalls: 5, maxTurns: 5, maxSpendCents: 1_000_000, maxWallClockSeconds: 3600 });
    const submitted = await submitToolCall(deps, created, agent, { callId: 'call_1', turn: 1, name: 'charge', arguments: { amount: 500 } });
    if (submitted.kind !== 'created') throw new Error(`submission ${submitted.kind}`);
    const id = submitted.op.operationId;
    for (let i = 0; i < 30; i++) {
      let op = (await store.getOperation(id))!;
      if (op.attempts === cancelAfterAttempt && op.plan?.next === 'retry' && !op.envelope) op = (await cancelOperation(deps, op)).op;
      const next = nextStep(op, clock);
      if (op.plan?.notBefore) clock = Math.max(clock, Date.parse(op.plan.notBefore));
      if (next === 'validate') await routeByRecord(deps, id);
      else if (next === 'execute' || next === 'retry') await executeAttempt(deps, id);
      else if (next === 'reconcile' || next === 'reconcile_later') await reconcileOutcome(deps, id);
      else if (next === 'report') await reportEnvelope(deps, id);
      else break;
    }
    const op = (await store.getOperation(id))!;
    const events = (store.events.get(created.runId) ?? []).filter((e) => e.operationId === id).map(brief);
    return { op, events };
  }
  return { up, run };
}

/** How a lookup that finds the charge ends the story. */
const FOUND_AND_REPORTED = [
  'reconcile.finished(found)',
  'outcome_unknown->recorded',
  'result.recorded(succeeded)',
  'recorded->reported',
  'result.reported',
];

/** An event as the trace tests read it: its type, and the move, outcome or finding it names. */
function brief(e: TraceEvent): string {
  if (e.type === 'state.transition') return `${e.from}->${e.to}`;
  const d = e.detail ?? {};
  const said = [d.decision, d.outcome, d.code, d.result, d.action].filter(Boolean).join('/');
  return said ? `${e.type}(${said})` : e.type;
}

describe('a failure after an unanswered attempt', () => {
  it('with a status lookup: looks once more before failing, and finds the charge the first attempt made late', async () => {
    const { up, run } = harness(true);
    const { op, events } = await run(['late', '429', '429']);
    expect(up.requests).toEqual(['POST', 'GET', 'POST', 'POST', 'GET']);
    expect(up.charges.size).toBe(1);
    expect(op.envelope).toMatchObject({ status: 'succeeded' });
    expect(op.outcome).toMatchObject({ kind: 'succeeded', result: { json: '{"id":"ch_1"}' } });
    expect(events.slice(events.indexOf('attempt.started'))).toEqual([
      'attempt.started',
      'attempt.finished(outcome_unknown/timeout_unknown)',
      'executing->outcome_unknown',
      'reconcile.started',
      'reconcile.finished(not_found/retry_same_key)',
      'backoff.scheduled',
      'outcome_unknown->executing',
      'attempt.started',
      'attempt.finished(failed_retryable/rate_limited)',
      'backoff.scheduled',
      'attempt.started',
      'attempt.finished(failed_retryable/rate_limited)',
      // Out of attempts: not failed yet, because the first attempt may still land.
      'executing->outcome_unknown',
      'policy.decision(failure_in_doubt/rate_limited)',
      'reconcile.started',
      ...FOUND_AND_REPORTED,
    ]);
  });

  it('with a status lookup that still finds nothing: the failure the retries reached is recorded', async () => {
    const { up, run } = harness(true);
    const { op, events } = await run(['lost', '429', '429']);
    expect(up.charges.size).toBe(0);
    expect(op.envelope).toMatchObject({ status: 'failed', code: 'rate_limited' });
    expect(events.slice(events.lastIndexOf('attempt.started'))).toEqual([
      'attempt.started',
      'attempt.finished(failed_retryable/rate_limited)',
      'executing->outcome_unknown',
      'policy.decision(failure_in_doubt/rate_limited)',
      'reconcile.started',
      'reconcile.finished(not_found/fail)',
      'outcome_unknown->failed_permanent',
      'result.recorded(failed_permanent/rate_limited)',
      'failed_permanent->reported',
      'result.reported',
    ]);
  });

  it('without a status lookup: a person decides, and the model hears outcome_unknown, never failed', async () => {
    const { up, run } = harness(false);
    const { op, events } = await run(['late', '503', '503']);
    expect(up.charges.size).toBe(1);
    expect(op.review).toMatchObject({ required: true });
    expect(op.review!.reason).toContain("an earlier attempt's outcome is unknown");
    expect(op.envelope).toMatchObject({ status: 'outcome_unknown' });
    expect(events).toContain('reconcile.finished(needs_review)');
    expect(events).not.toContain('result.recorded(failed_permanent/upstream_unavailable)');
  });

  it('when the last attempt goes unanswered: a lookup that finds nothing at once is looked at again after the timeout', async () => {
    const { up, run } = harness(true);
    const { op, events } = await run(['429', '429', 'late']);
    expect(up.requests).toEqual(['POST', 'POST', 'POST', 'GET', 'GET']);
    expect(op.outcome).toMatchObject({ kind: 'succeeded', result: { json: '{"id":"ch_1"}' } });
    expect(events.slice(events.lastIndexOf('attempt.started'))).toEqual([
      'attempt.started',
      'attempt.finished(outcome_unknown/timeout_unknown)',
      'executing->outcome_unknown',
      'reconcile.started',
      // No attempts left, but the request given up on may still be on its way: not failed yet.
      'reconcile.finished(not_found/look_again)',
      'backoff.scheduled',
      'reconcile.started',
      ...FOUND_AND_REPORTED,
    ]);
  });

  it('cancelled between retries after an unanswered attempt: stays watched, and the charge that landed is recorded late', async () => {
    const { up, run } = harness(true);
    const { op, events } = await run(['late', '429'], 2);
    expect(up.charges.size).toBe(1);
    expect(op.envelope).toMatchObject({ status: 'cancelled' });
    expect(op.lateOutcome).toMatchObject({ kind: 'succeeded', result: { json: '{"id":"ch_1"}' } });
    expect(events.slice(events.indexOf('attempt.finished(failed_retryable/rate_limited)'))).toEqual([
      'attempt.finished(failed_retryable/rate_limited)',
      'backoff.scheduled',
      'executing->cancelled',
      'result.recorded(cancelled/cancelled)',
      'cancelled->reported',
      'result.reported',
      'reconcile.started',
      'reconcile.finished(found)',
      'result.late(succeeded)',
    ]);
  });
});
