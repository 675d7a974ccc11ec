import { describe, expect, it } from 'vitest';
import { transition } from '../../../functions/core/engine';
import { operation } from '../../support/records';

const now = Date.parse('2026-11-30T12:00:00Z');
const lease = new Date(now + 60_000).toISOString();
const unknown = operation({ state: 'outcome_unknown', attempts: 1, inDoubtSince: 1, plan: { next: 'reconcile' } });

describe('reconcile transitions', () => {
  it('a lookup that finds the effect records it as the result', () => {
    const { op, events } = transition(
      unknown,
      { type: 'finish_reconcile', plan: 'lookup', finding: { result: 'found', outcome: { kind: 'succeeded' } }, leaseUntil: lease },
      now,
    );
    expect(op.state).toBe('recorded');
    expect(events[0]).toMatchObject({ type: 'reconcile.finished', detail: { plan: 'lookup', result: 'found' } });
  });

  it('nothing found with attempts left: another attempt with the same key after a backoff', () => {
    const { op, events } = transition(
      unknown,
      { type: 'finish_reconcile', plan: 'lookup', finding: { result: 'not_found', retry: { delaySeconds: 3 } }, leaseUntil: lease },
      now,
    );
    expect(op).toMatchObject({ state: 'outcome_unknown', plan: { next: 'retry' }, idempotencyKey: unknown.idempotencyKey });
    expect(events.map((e) => e.type)).toEqual(['reconcile.finished', 'backoff.scheduled']);
  });

  it('a lookup that cannot answer, or no way to look, goes to a person', () => {
    const { op } = transition(
      unknown,
      { type: 'finish_reconcile', plan: 'review', finding: { result: 'needs_review', reason: 'no lookup' } },
      now,
    );
    expect(op.review).toMatchObject({ required: true, reason: 'no lookup' });
  });

  it('starting a reconciliation is traced with its plan', () => {
    const { events } = transition(unknown, { type: 'start_reconcile', plan: 'lookup', leaseUntil: lease }, now);
    expect(events).toEqual([expect.objectContaining({ type: 'reconcile.started', detail: { plan: 'lookup' } })]);
  });
});
