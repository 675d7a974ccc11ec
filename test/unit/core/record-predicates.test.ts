import { describe, expect, it } from 'vitest';
import * as p from '../../../functions/core/record-predicates';
import { operation } from '../../support/records';

const answered = (attempt: number) => ({ attempt, outcome: { kind: 'succeeded' } as const, latencyMs: 1, finishedAt: '' });

describe('record predicates', () => {
  it('an attempt is unfinished while executing without its answer, presumed lost only in outcome_unknown', () => {
    expect(p.attemptUnfinished(operation({ state: 'executing', attempts: 1 }))).toBe(true);
    expect(p.attemptUnfinished(operation({ state: 'executing', attempts: 1, lastAttempt: answered(1) }))).toBe(false);
    expect(p.attemptPresumedLost(operation({ state: 'outcome_unknown', attempts: 1 }))).toBe(true);
    expect(p.attemptPresumedLost(operation({ state: 'outcome_unknown', attempts: 1, review: { required: true, reason: 'r' } }))).toBe(
      false,
    );
  });

  it('doubt starts at the first unanswered attempt and covers only later ones', () => {
    const op = operation({ state: 'executing', attempts: 3, inDoubtSince: 1 });
    expect(p.inDoubtBefore(op, 1)).toBe(false);
    expect(p.inDoubtBefore(op, 2)).toBe(true);
    expect(p.inDoubtBefore(operation({ state: 'executing', attempts: 2 }), 2)).toBe(false);
  });

  it('a cancelled call whose attempt may still act stays active until its late result is settled', () => {
    const cancelled = operation({
      state: 'reported',
      attempts: 1,
      outcome: { kind: 'cancelled', code: 'cancelled', message: 'm' },
      envelope: { status: 'cancelled' } as never,
    });
    expect(p.lateAttemptUnsettled(cancelled)).toBe(true);
    expect(p.isActive(cancelled)).toBe(true);
    const settled = { ...cancelled, lateOutcome: { kind: 'succeeded' } as const };
    expect(p.lateAttemptUnsettled(settled)).toBe(false);
    expect(p.isActive(settled)).toBe(false);
  });

  it('knows who asked, whose operation it is, and what is safe to replay', () => {
    expect(p.requesterOf({ principalId: 'owner' })).toBe('owner');
    expect(p.requesterOf({ principalId: 'owner', requestedBy: 'agent' })).toBe('agent');
    expect(p.isOwnOperation('owner', { principalId: 'owner', requestedBy: 'agent' })).toBe(true);
    expect(p.isOwnOperation('agent', { principalId: 'owner', requestedBy: 'agent' })).toBe(true);
    expect(p.isOwnOperation('alice', { principalId: 'owner', requestedBy: 'agent' })).toBe(false);
    expect(p.replaySafe({ risk: 'read', supportsIdempotency: false })).toBe(true);
    expect(p.replaySafe({ risk: 'irreversible_write', supportsIdempotency: false })).toBe(false);
    expect(
      p.approvalPending(operation({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'pending', expiresAt: '' } })),
    ).toBe(true);
    expect(p.upstreamStatusOf({ kind: 'failed_permanent', code: 'permanent_failure', message: '', upstreamStatus: 402 })).toBe(402);
    expect(p.upstreamStatusOf({ kind: 'succeeded' })).toBeUndefined();
  });
});
