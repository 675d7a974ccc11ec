import { describe, expect, it } from 'vitest';
import { OperationState } from '../../../functions/core/lifecycle';
import { ACCEPTS, accepts, InvalidEventError, readyToAttempt } from '../../../functions/core/transition-table';
import { operation } from '../../support/records';

const approval = (state: 'pending' | 'approved') => ({ approvalId: 'apr_1', state, expiresAt: '2026-12-01T00:00:00.000Z' });

describe('the transition table', () => {
  it('names only real states for every event', () => {
    const states = Object.values(OperationState) as string[];
    for (const rule of Object.values(ACCEPTS)) for (const s of rule.states) expect(states).toContain(s);
  });

  it('lets an attempt start only where the lifecycle put the operation', () => {
    expect(readyToAttempt(operation({ state: 'validated' }))).toBe(true);
    expect(readyToAttempt(operation({ state: 'validated', approvalRequired: true }))).toBe(false);
    expect(readyToAttempt(operation({ state: 'awaiting_approval', approval: approval('pending') }))).toBe(false);
    expect(readyToAttempt(operation({ state: 'awaiting_approval', approval: approval('approved') }))).toBe(true);
    expect(readyToAttempt(operation({ state: 'executing', attempts: 1, plan: { next: 'retry' } }))).toBe(false);
    const answered = {
      attempt: 1,
      outcome: { kind: 'failed_retryable' as const, code: 'upstream_unavailable' as const, message: '' },
      latencyMs: 1,
      finishedAt: '',
    };
    expect(readyToAttempt(operation({ state: 'executing', attempts: 1, plan: { next: 'retry' }, lastAttempt: answered }))).toBe(true);
    expect(readyToAttempt(operation({ state: 'reported' }))).toBe(false);
  });

  it('accepts a decision only while the approval is pending, and says why it refuses', () => {
    expect(accepts(operation({ state: 'awaiting_approval', approval: approval('pending') }), 'decide_approval')).toBe(true);
    expect(accepts(operation({ state: 'awaiting_approval', approval: approval('approved') }), 'decide_approval')).toBe(false);
    expect(accepts(operation({ state: 'proposed' }), 'decide_approval')).toBe(false);
    expect(new InvalidEventError('proposed', 'report').message).toBe('an operation in state proposed does not accept report');
  });
});
