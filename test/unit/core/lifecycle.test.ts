import { describe, expect, it } from 'vitest';
import { canTransition, InvalidTransitionError, moveTo, OperationState, SETTLED } from '../../../functions/core/lifecycle';
import type { OperationRecord } from '../../../functions/core/model';
import { operation } from '../../support/records';

const op = (over: Partial<OperationRecord>): OperationRecord =>
  operation({ schemaVersion: 1, toolName: 't', principalId: 'p', createdAt: '', updatedAt: '', ...over });

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
