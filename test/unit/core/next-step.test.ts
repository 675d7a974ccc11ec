import { describe, expect, it } from 'vitest';
import { nextStep, stepOutput, waitOutput } from '../../../functions/core/next-step';
import type { OperationRecord } from '../../../functions/core/model';
import { operation } from '../../support/records';

const now = Date.parse('2026-11-30T12:00:00Z');
const op = (over: Partial<OperationRecord>): OperationRecord =>
  operation({ schemaVersion: 1, toolName: 't', principalId: 'p', createdAt: '', updatedAt: '', ...over });
const finished = {
  attempt: 1,
  outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '' } as const,
  latencyMs: 1,
  finishedAt: '',
};

describe('where the lifecycle goes next', () => {
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
});

describe('a step that finds another delivery of itself at work', () => {
  it('looks again through the Backoff wait, 1 to 10 s later, never at once', () => {
    const op = { operationId: 'op_1' } as Parameters<typeof waitOutput>[0];
    expect(waitOutput(op, 0.2)).toEqual({ operationId: 'op_1', next: 'retry', delaySeconds: 1 });
    expect(waitOutput(op, 4.1)).toEqual({ operationId: 'op_1', next: 'retry', delaySeconds: 5 });
    expect(waitOutput(op, 65)).toEqual({ operationId: 'op_1', next: 'retry', delaySeconds: 10 });
  });
});
