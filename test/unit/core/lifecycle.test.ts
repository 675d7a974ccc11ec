import { describe, expect, it } from 'vitest';
import { canTransition, InvalidTransitionError, moveTo, OperationState, SETTLED } from '../../../functions/core/lifecycle';
import type { OperationRecord } from '../../../functions/core/model';

const _now = Date.parse('2026-11-30T12:00:00Z');
const op = (over: Partial<OperationRecord>): OperationRecord => ({
  schemaVersion: 1,
  operationId: 'op_1',
  runId: 'run_1',
  callId: 'call_1',
  turn: 1,
  toolName: 't',
  principalId: 'p',
  state: 'proposed',
  rawArguments: '{}',
  inputHash: 'sha256:x',
  idempotencyKey: 'idk_x',
  attempts: 0,
  createdAt: '',
  updatedAt: '',
  version: 1,
  resumes: 0,
  ...over,
});
const _finished = {
  attempt: 1,
  outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '' } as const,
  latencyMs: 1,
  finishedAt: '',
};

describe('lifecycle states', () => {
  it('allows only the moves of the lifecycle table', () => {
    expect(canTransition('proposed', 'validated')).toBe(true);
    expect(canTransition('proposed', 'executing')).toBe(false);
    expect(canTransition('outcome_unknown', 'rejected')).toBe(false);
    expect(canTransition('awaiting_approval', 'awaiting_approval')).toBe(false);
    for (const s of SETTLED) expect(canTransition(s, 'reported')).toBe(true);
    for (const s of Object.values(OperationState)) expect(canTransition('reported', s)).toBe(false);
    expect(() => moveTo(op({ state: 'recorded' }), 'executing', {})).toThrow(InvalidTransitionError);
  });

  it('emits a state.transition event naming both states', () => {
    const moved = moveTo(op({ attempts: 2 }), 'validated', { risk: 'read' });
    expect(moved.op).toMatchObject({ state: 'validated', risk: 'read' });
    expect(moved.events).toEqual([
      { type: 'state.transition', operationId: 'op_1', callId: 'call_1', from: 'proposed', to: 'validated', attempt: 2 },
    ]);
  });
});
