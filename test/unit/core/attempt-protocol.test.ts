import { describe, expect, it } from 'vitest';
import { decideAfterAttempt, reconcilePlanOf, settleFailureBy } from '../../../functions/core/attempt-protocol';
import { operation, toolSpec } from '../../support/records';

const now = Date.parse('2026-11-30T12:00:00Z');
const unavailable = { kind: 'failed_retryable', code: 'upstream_unavailable', message: '503' } as const;
const random = () => 0.5;

describe('the decision after an attempt', () => {
  it('retries a transient failure while attempts remain, then records it as permanent', () => {
    const tool = toolSpec({ maxAttempts: 3 });
    expect(decideAfterAttempt(tool, operation({ state: 'executing', attempts: 1 }), unavailable, now, random)).toMatchObject({
      next: 'retry',
      reason: 'upstream_unavailable',
    });
    const last = decideAfterAttempt(tool, operation({ state: 'executing', attempts: 3 }), unavailable, now, random);
    expect(last).toMatchObject({ next: 'record', outcome: { kind: 'failed_permanent', code: 'upstream_unavailable' } });
  });

  it('never retries past the operation deadline, and never retries an unknown outcome blindly', () => {
    const tool = toolSpec({ maxAttempts: 5, timeoutMs: 10_000 });
    const soon = operation({ state: 'executing', attempts: 1, deadlineAt: new Date(now + 5_000).toISOString() });
    expect(decideAfterAttempt(tool, soon, unavailable, now, random)).toMatchObject({ next: 'record' });
    const unknown = { kind: 'outcome_unknown', code: 'timeout_unknown', message: 't' } as const;
    expect(decideAfterAttempt(tool, operation({ attempts: 1 }), unknown, now, random)).toEqual({ next: 'reconcile' });
  });

  it('confirms a failure that follows an unanswered attempt, by lookup when there is one, else by a person', () => {
    const doubted = operation({ state: 'executing', attempts: 2, inDoubtSince: 1 });
    const failure = { kind: 'failed_permanent', code: 'permanent_failure', message: '402' } as const;
    const lookup = toolSpec({ reconcile: async () => ({ found: false }) });
    expect(decideAfterAttempt(lookup, doubted, failure, now, random)).toMatchObject({ next: 'confirm', by: 'lookup' });
    expect(decideAfterAttempt(toolSpec(), doubted, failure, now, random)).toMatchObject({ next: 'confirm', by: 'review' });
    expect(settleFailureBy(toolSpec({ risk: 'read' }), doubted, 2)).toBeUndefined();
  });

  it('plans reconciliation from the registration alone', () => {
    expect(reconcilePlanOf(toolSpec({ reconcile: async () => ({ found: false }) }))).toBe('lookup');
    expect(reconcilePlanOf(toolSpec({ supportsIdempotency: true }))).toBe('replay');
    expect(reconcilePlanOf(toolSpec({ supportsIdempotency: false, maxAttempts: 1 }))).toBe('review');
  });
});
