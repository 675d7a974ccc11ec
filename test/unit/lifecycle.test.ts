import { describe, expect, it } from 'vitest';
import { canTransition, InvalidTransitionError, moveTo, OperationState, resumeStep, SETTLED } from '../../functions/core/lifecycle';
import type { OperationRecord } from '../../functions/core/model';

const op = (over: Partial<OperationRecord>): OperationRecord => ({
  schemaVersion: 1, operationId: 'op_1', runId: 'run_1', callId: 'call_1', turn: 1, toolName: 't', principalId: 'p', state: 'proposed',
  rawArguments: {}, inputHash: 'sha256:x', idempotencyKey: 'idk_x', attempts: 0, createdAt: '', updatedAt: '', version: 1, resumes: 0, ...over,
});

describe('lifecycle', () => {
  it('allows only the normative lifecycle moves', () => {
    expect(canTransition('proposed', 'validated')).toBe(true);
    expect(canTransition('proposed', 'executing')).toBe(false);
    expect(canTransition('outcome_unknown', 'rejected')).toBe(false);
    expect(canTransition('reported', 'executing')).toBe(false);
    for (const s of SETTLED) expect(canTransition(s, 'reported')).toBe(true);
    for (const s of Object.values(OperationState)) expect(canTransition('reported', s)).toBe(false);
    expect(() => moveTo(op({ state: 'recorded' }), 'executing', {})).toThrow(InvalidTransitionError);
  });

  it('emits a state.transition event naming both states', () => {
    const moved = moveTo(op({ attempts: 2 }), 'validated', { risk: 'read' });
    expect(moved.op).toMatchObject({ state: 'validated', risk: 'read' });
    expect(moved.events).toEqual([{ type: 'state.transition', operationId: 'op_1', callId: 'call_1', from: 'proposed', to: 'validated', attempt: 2 }]);
    expect(moveTo(op({ state: 'executing' }), 'executing', {}).events).toEqual([]);
  });

  it('resumes from the durable record alone', () => {
    expect(resumeStep(op({ state: 'proposed' }))).toBe('validate');
    expect(resumeStep(op({ state: 'validated', approvalRequired: true }))).toBe('await_approval');
    expect(resumeStep(op({ state: 'validated' }))).toBe('execute');
    expect(resumeStep(op({ state: 'awaiting_approval', approval: { approvalId: 'a', state: 'approved', expiresAt: '' } }))).toBe('execute');
    // An attempt whose outcome was never written may have reached the upstream.
    expect(resumeStep(op({ state: 'executing', attempts: 1 }))).toBe('reconcile');
    const finished = { attempt: 1, outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '' } as const, latencyMs: 1, finishedAt: '' };
    expect(resumeStep(op({ state: 'executing', attempts: 1, lastAttempt: finished, plan: { next: 'retry' } }))).toBe('retry');
    expect(resumeStep(op({ state: 'executing', attempts: 1, lastAttempt: finished, plan: { next: 'record' } }))).toBe('record');
    expect(resumeStep(op({ state: 'outcome_unknown' }))).toBe('reconcile');
    expect(resumeStep(op({ state: 'outcome_unknown', review: { required: true, reason: '' } }))).toBe('report');
    expect(resumeStep(op({ state: 'recorded' }))).toBe('report');
    expect(resumeStep(op({ state: 'reported' }))).toBe('done');
  });
});
