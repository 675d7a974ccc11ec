import { describe, expect, it } from 'vitest';
import { ACCEPTS, InvalidEventError } from '../../../functions/core/transition-table';
import { transition } from '../../../functions/core/engine';
import type { LifecycleEvent } from '../../../functions/core/lifecycle-events';
import type { OperationRecord } from '../../../functions/core/model';
import { operation } from '../../support/records';
import { storedResultOf } from '../../../functions/core/result-record';

const now = Date.parse('2026-11-30T12:00:00Z');
const op = (over: Partial<OperationRecord>): OperationRecord =>
  operation({ schemaVersion: 1, toolName: 't', principalId: 'p', createdAt: '', updatedAt: '', ...over });

describe('engine', () => {
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
