import { describe, expect, it } from 'vitest';
import { transition } from '../../../functions/core/engine';
import { nextStep, stepOutput } from '../../../functions/core/next-step';
import { operation } from '../../support/records';

const now = Date.parse('2026-11-30T12:00:00Z');
const lease = new Date(now + 60_000).toISOString();
const types = (events: { type: string }[]) => events.map((e) => e.type);

describe('attempt transitions', () => {
  it('start an attempt: executing, the attempt counted, attempt.started', () => {
    const { op, events } = transition(operation({ state: 'validated' }), { type: 'start_attempt', leaseUntil: lease }, now);
    expect(op).toMatchObject({ state: 'executing', attempts: 1, leaseUntil: lease });
    expect(types(events)).toEqual(['state.transition', 'attempt.started']);
  });

  it('a lost attempt becomes outcome_unknown to reconcile, never a failure', () => {
    const { op } = transition(operation({ state: 'executing', attempts: 1 }), { type: 'lose_attempt', leaseUntil: lease }, now);
    expect(op).toMatchObject({ state: 'outcome_unknown', plan: { next: 'reconcile' }, inDoubtSince: 1 });
  });

  it('a retry after a finished attempt keeps the operation and schedules the backoff', () => {
    const { op, events } = transition(
      operation({ state: 'executing', attempts: 1 }),
      {
        type: 'finish_attempt',
        attempt: 1,
        outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '503' },
        latencyMs: 12,
        upstreamStatus: 503,
        after: { next: 'retry', delaySeconds: 2, reason: 'upstream_unavailable' },
      },
      now,
    );
    expect(op).toMatchObject({ state: 'executing', plan: { next: 'retry', notBefore: new Date(now + 2_000).toISOString() } });
    expect(types(events)).toEqual(['attempt.finished', 'backoff.scheduled']);
    expect(events[0]).toMatchObject({ detail: { outcome: 'failed_retryable', upstreamStatus: 503, latencyMs: 12 } });
  });

  it('a held lock schedules another try, not before its delay, without counting an attempt', () => {
    const { op, events } = transition(operation({ state: 'validated' }), { type: 'lock_busy', delaySeconds: 5, leaseUntil: lease }, now);
    expect(op).toMatchObject({
      state: 'validated',
      attempts: 0,
      lockWaits: 1,
      plan: { next: 'retry', notBefore: new Date(now + 5_000).toISOString() },
    });
    // The route waits: a first attempt never re-enters Execute at once (the busy loop a held lock once caused).
    expect(nextStep(op, now)).toBe('retry');
    expect(stepOutput(op, now)).toMatchObject({ next: 'retry', delaySeconds: 5 });
    expect(events).toEqual([expect.objectContaining({ type: 'backoff.scheduled', detail: { delaySeconds: 5, reason: 'lock_busy' } })]);
    // The waits are counted until an attempt begins, which starts the count again.
    const again = transition(op, { type: 'lock_busy', delaySeconds: 28, leaseUntil: lease }, now).op;
    expect(again.lockWaits).toBe(2);
    expect(transition(again, { type: 'start_attempt', leaseUntil: lease }, now).op).toMatchObject({
      state: 'executing',
      lockWaits: undefined,
    });
  });

  it('a lock wait that reaches the deadline ends the operation as a permanent failure, lock_wait_deadline', () => {
    const { op, events } = transition(
      operation({ state: 'validated', lockWaits: 2 }),
      {
        type: 'refuse_attempt',
        outcome: { kind: 'failed_permanent', code: 'permanent_failure', message: 'deadline (lock_wait_deadline)' },
        reason: 'lock_wait_deadline',
      },
      now,
    );
    expect(op).toMatchObject({ state: 'failed_permanent', outcome: { code: 'permanent_failure' } });
    expect(events.find((e) => e.type === 'result.recorded')?.detail).toMatchObject({ reason: 'lock_wait_deadline' });
  });

  it('a refused attempt settles with the refusal', () => {
    const { op } = transition(
      operation({ state: 'validated' }),
      { type: 'refuse_attempt', outcome: { kind: 'rejected', code: 'forbidden', message: 'no longer allowed' } },
      now,
    );
    expect(op).toMatchObject({ state: 'rejected', outcome: { code: 'forbidden' } });
  });
});
