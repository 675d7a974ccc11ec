import { describe, expect, it } from 'vitest';
import { ACCEPTS, InvalidEventError } from '../../functions/core/transition-table';
import { nextStep, stepOutput } from '../../functions/core/next-step';
import { transition } from '../../functions/core/engine';
import type { LifecycleEvent } from '../../functions/core/lifecycle-events';
import { canTransition, InvalidTransitionError, moveTo, OperationState, SETTLED } from '../../functions/core/lifecycle';
import type { OperationRecord } from '../../functions/core/model';
import { storedResultOf } from '../../functions/core/result-record';

const now = Date.parse('2026-11-30T12:00:00Z');
const op = (over: Partial<OperationRecord>): OperationRecord => ({
  schemaVersion: 1,
  operationId: 'op_1',
  runId: 'run_1',
  callId: 'call_1',
  turn: 1,
  toolName: 't',
  principalId: 'p',
  state: 'proposed',
  rawArguments: '{}',
  inputHash: 'sha256:x',
  idempotencyKey: 'idk_x',
  attempts: 0,
  createdAt: '',
  updatedAt: '',
  version: 1,
  resumes: 0,
  ...over,
});
const finished = {
  attempt: 1,
  outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '' } as const,
  latencyMs: 1,
  finishedAt: '',
};

describe('lifecycle states', () => {
  it('allows only the moves of the lifecycle table', () => {
    expect(canTransition('proposed', 'validated')).toBe(true);
    expect(canTransition('proposed', 'executing')).toBe(false);
    expect(canTransition('outcome_unknown', 'rejected')).toBe(false);
    expect(canTransition('awaiting_approval', 'awaiting_approval')).toBe(false);
    for (const s of SETTLED) expect(canTransition(s, 'reported')).toBe(true);
    for (const s of Object.values(OperationState)) expect(canTransition('reported', s)).toBe(false);
    expect(() => moveTo(op({ state: 'recorded' }), 'executing', {})).toThrow(InvalidTransitionError);
  });

  it('emits a state.transition event naming both states', () => {
    const moved = moveTo(op({ attempts: 2 }), 'validated', { risk: 'read' });
    expect(moved.op).toMatchObject({ state: 'validated', risk: 'read' });
    expect(moved.events).toEqual([
      { type: 'state.transition', operationId: 'op_1', callId: 'call_1', from: 'proposed', to: 'validated', attempt: 2 },
    ]);
  });
});

describe('engine', () => {
  it('routes from the durable record and the clock alone', () => {
    expect(nextStep(op({ state: 'proposed' }), now)).toBe('validate');
    expect(nextStep(op({ state: 'validated', approvalRequired: true }), now)).toBe('await_approval');
    expect(nextStep(op({ state: 'validated' }), now)).toBe('execute');
    const expiresAt = new Date(now + 5000).toISOString();
    expect(nextStep(op({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'approved', expiresAt } }), now)).toBe('execute');
    expect(nextStep(op({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'pending', expiresAt } }), now)).toBe(
      'await_approval',
    );
    // A restart after the expiry goes straight to expiring it, never to a new wait.
    expect(nextStep(op({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'pending', expiresAt } }), now + 6000)).toBe(
      'expire_approval',
    );
    expect(nextStep(op({ state: 'executing', attempts: 1, plan: { next: 'execute' } }), now)).toBe('execute');
    expect(nextStep(op({ state: 'executing', attempts: 1, plan: { next: 'reconcile' } }), now)).toBe('reconcile');
    expect(nextStep(op({ state: 'executing', attempts: 1, lastAttempt: finished, plan: { next: 'retry' } }), now)).toBe('retry');
    expect(nextStep(op({ state: 'outcome_unknown' }), now)).toBe('reconcile');
    expect(nextStep(op({ state: 'outcome_unknown', review: { required: true, reason: '' } }), now)).toBe('report');
    expect(nextStep(op({ state: 'recorded' }), now)).toBe('report');
    expect(nextStep(op({ state: 'reported' }), now)).toBe('done');
  });

  it('keeps the timers on every step output', () => {
    const expiresAt = new Date(now + 15_500).toISOString();
    expect(stepOutput(op({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'pending', expiresAt } }), now)).toEqual({
      operationId: 'op_1',
      next: 'await_approval',
      Payload: { approvalTimeoutSeconds: 16 },
    });
    expect(
      stepOutput(
        op({
          state: 'executing',
          attempts: 1,
          lastAttempt: finished,
          plan: { next: 'retry', notBefore: new Date(now + 2000).toISOString() },
        }),
        now,
      ),
    ).toEqual({ operationId: 'op_1', next: 'retry', delaySeconds: 2 });
    // Before the request exists, the wait lasts the configured time to live.
    expect(stepOutput(op({ state: 'validated', approvalRequired: true }), now, 600)).toMatchObject({
      next: 'await_approval',
      Payload: { approvalTimeoutSeconds: 600 },
    });
    expect(
      stepOutput(op({ state: 'outcome_unknown', plan: { next: 'reconcile_later', notBefore: new Date(now + 3000).toISOString() } }), now),
    ).toMatchObject({ next: 'reconcile_later', delaySeconds: 3 });
  });

  it('a resumed approval wait keeps its request and expiry: no second approval.requested', () => {
    const waiting = op({
      state: 'awaiting_approval',
      approval: { approvalId: 'a', state: 'pending', expiresAt: 'T1' },
      approvalTaskToken: 'old',
    });
    const again = transition(
      waiting,
      { type: 'request_approval', approvalId: 'a', expiresAt: 'T2', taskToken: 'new', leaseUntil: 'L' },
      now,
    );
    expect(again.events).toEqual([]);
    expect(again.op).toMatchObject({ state: 'awaiting_approval', approvalTaskToken: 'new', approval: { expiresAt: 'T1' } });
  });

  it('refuses every event outside its table, and a cancel after the result keeps the result', () => {
    const events: LifecycleEvent[] = [
      { type: 'expire_approval' },
      { type: 'start_reconcile', plan: 'lookup', leaseUntil: 'L' },
      { type: 'resolve', verdict: 'failed', by: 'r', note: 'n' },
    ];
    for (const e of events)
      expect(() => transition(op({ state: 'recorded', outcome: { kind: 'succeeded', result: storedResultOf(1) } }), e, now)).toThrow(
        InvalidEventError,
      );
    expect(ACCEPTS.cancel.states).not.toContain('recorded');
    // The result landed first: a later cancel is refused, the real result stays.
    const executing = op({ state: 'executing', attempts: 1, plan: { next: 'execute' } });
    const recorded = transition(
      executing,
      {
        type: 'finish_attempt',
        attempt: 1,
        outcome: { kind: 'succeeded', result: storedResultOf({ id: 'ch_1' }) },
        latencyMs: 3,
        after: { next: 'record', outcome: { kind: 'succeeded', result: storedResultOf({ id: 'ch_1' }) } },
      },
      now,
    );
    expect(recorded.op.state).toBe('recorded');
    expect(() => transition(recorded.op, { type: 'cancel', reason: 'x' }, now)).toThrow(InvalidEventError);
    // The cancel landed first: the result that comes back is kept as late, never lost.
    const cancelled = transition(executing, { type: 'cancel', reason: 'x' }, now);
    const late = transition(
      cancelled.op,
      {
        type: 'finish_attempt',
        attempt: 1,
        outcome: { kind: 'succeeded', result: storedResultOf({ id: 'ch_1' }) },
        latencyMs: 3,
        after: { next: 'record', outcome: { kind: 'succeeded', result: storedResultOf({ id: 'ch_1' }) } },
      },
      now,
    );
    expect(late.op).toMatchObject({ state: 'reported', envelope: { status: 'cancelled' }, lateOutcome: { kind: 'succeeded' } });
    expect(late.events.map((e) => e.type)).toEqual(['attempt.finished', 'result.late']);
  });
});
