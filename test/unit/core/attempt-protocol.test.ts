import { describe, expect, it } from 'vitest';
import {
  callerAnswerable,
  decideAfterAttempt,
  planAttempt,
  reconcilePlanOf,
  reconcileStart,
  settleFailureBy,
  submitterSendsFirstAttempt,
} from '../../../functions/core/attempt-protocol';
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

describe('who sends attempt N, who waits, who presumes it lost', () => {
  const at = (ms: number) => new Date(now + ms).toISOString();
  const tool = toolSpec({ timeoutMs: 5_000 });
  const ctx = { tool, now, holdsIntent: false, tooLate: false };
  // The first attempt's intent, written with the submission; `attemptClaimed: false` until a worker takes it.
  const recorded = (over: Parameters<typeof operation>[0] = {}) =>
    operation({ state: 'executing', attempts: 1, plan: { next: 'execute' }, attemptClaimed: false, leaseUntil: at(65_000), ...over });

  it('the submitting process sends the first attempt itself only when it fits the wait and a synchronous execution finishes the rest', () => {
    expect(submitterSendsFirstAttempt(tool, 10, true)).toBe(true);
    expect(submitterSendsFirstAttempt(tool, 8, true)).toBe(true);
    expect(submitterSendsFirstAttempt(tool, 7, true)).toBe(false);
    expect(submitterSendsFirstAttempt(tool, 10, false)).toBe(false);
    expect(submitterSendsFirstAttempt(tool, 0, true)).toBe(false);
    expect(submitterSendsFirstAttempt(toolSpec({ lockKey: () => 'k' }), 10, true)).toBe(false);
    expect(submitterSendsFirstAttempt(undefined, 10, true)).toBe(false);
  });

  it('Execute starts a fresh attempt, or hands it off when it could outlast its execution, or waits out a recorded wait', () => {
    const validated = operation({ state: 'validated' });
    expect(planAttempt(validated, ctx)).toEqual({
      value: { kind: 'send', attempt: 1 },
      events: [{ type: 'start_attempt', leaseUntil: at(65_000) }],
    });
    expect(planAttempt(validated, { ...ctx, tooLate: true })).toEqual({ value: { kind: 'handoff' } });
    expect(planAttempt({ ...validated, plan: { next: 'retry', notBefore: at(1) } }, ctx)).toEqual({ value: { kind: 'route' } });
  });

  it('the recorded first attempt is sent by the process that holds its intent, or claimed by the first worker', () => {
    expect(planAttempt(recorded(), { ...ctx, holdsIntent: true })).toEqual({ value: { kind: 'send', attempt: 1 } });
    expect(planAttempt(recorded(), ctx)).toEqual({
      value: { kind: 'send', attempt: 1 },
      events: [{ type: 'claim_attempt', leaseUntil: at(65_000) }],
    });
    expect(planAttempt(recorded(), { ...ctx, tooLate: true })).toEqual({ value: { kind: 'handoff' } });
  });

  it('a second worker waits for the sender within its lease, and presumes the attempt lost once it is over', () => {
    const claimed = recorded({ attemptClaimed: true, attemptResumes: 0, leaseUntil: at(20_000) });
    expect(planAttempt(claimed, ctx)).toEqual({ value: { kind: 'wait', seconds: 20 } });
    expect(planAttempt(claimed, { ...ctx, now: now + 20_000 })).toEqual({
      value: { kind: 'route' },
      events: [{ type: 'lose_attempt', leaseUntil: new Date(now + 85_000).toISOString() }],
    });
    // A sender from an earlier execution (before a resume) is not waited for.
    expect(planAttempt({ ...claimed, resumes: 1 }, ctx).events).toEqual([{ type: 'lose_attempt', leaseUntil: at(65_000) }]);
  });

  it('Reconcile sends an unclaimed attempt back after a backoff, waits for a live sender, and only then presumes it lost', () => {
    expect(reconcileStart(recorded(), tool, 'lookup', now)).toEqual({
      value: false,
      events: [{ type: 'defer_attempt', delaySeconds: 2, leaseUntil: at(67_000) }],
    });
    const claimed = recorded({ attemptClaimed: true, attemptResumes: 0, leaseUntil: at(20_000) });
    expect(reconcileStart(claimed, tool, 'lookup', now)).toEqual({ value: { waitMs: 20_000 } });
    expect(reconcileStart(claimed, tool, 'lookup', now + 20_000).events?.map((e) => e.type)).toEqual(['lose_attempt', 'start_reconcile']);
  });

  it('a waiting caller is answered once the envelope is decided or a person is asked', () => {
    expect(callerAnswerable(recorded())).toBe(false);
    expect(callerAnswerable(operation({ state: 'recorded', outcome: { kind: 'succeeded' } }))).toBe(true);
    expect(
      callerAnswerable(operation({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'pending', expiresAt: at(1) } })),
    ).toBe(true);
  });
});
