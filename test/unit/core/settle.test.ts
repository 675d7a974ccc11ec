import { describe, expect, it } from 'vitest';
import { outcomeSummary, recordLate, recordOutcome, settledStateOf } from '../../../functions/core/settle';
import { operation } from '../../support/records';

describe('settling an outcome', () => {
  it('maps each outcome to its settled state; an unknown one is never recorded as success', () => {
    expect(settledStateOf({ kind: 'succeeded' })).toBe('recorded');
    expect(settledStateOf({ kind: 'rejected', code: 'forbidden', message: '' })).toBe('rejected');
    expect(settledStateOf({ kind: 'outcome_unknown', code: 'timeout_unknown', message: '' })).toBe('failed_permanent');
    expect(settledStateOf({ kind: 'cancelled', code: 'cancelled', message: '' })).toBe('cancelled');
  });

  it('records with a transition and result.recorded, summarizing the result by its hash only', () => {
    const { op, events } = recordOutcome(operation({ state: 'executing', attempts: 1 }), { kind: 'succeeded' });
    expect(op).toMatchObject({ state: 'recorded', plan: { next: 'report' } });
    expect(events.map((e) => e.type)).toEqual(['state.transition', 'result.recorded']);
    expect(outcomeSummary({ kind: 'succeeded', result: { bytes: 2, sha256: 'sha256:r', json: '{}' } })).toEqual({
      outcome: 'succeeded',
      resultHash: 'sha256:r',
    });
  });

  it('keeps a late result beside the cancelled one without moving the record', () => {
    const cancelled = operation({ state: 'reported', attempts: 1, outcome: { kind: 'cancelled', code: 'cancelled', message: '' } });
    const { op, events } = recordLate(cancelled, { kind: 'succeeded' }, 1);
    expect(op.state).toBe('reported');
    expect(op.lateOutcome).toEqual({ kind: 'succeeded' });
    expect(events).toEqual([expect.objectContaining({ type: 'result.late', attempt: 1 })]);
  });
});
