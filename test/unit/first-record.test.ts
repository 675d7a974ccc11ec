import { describe, expect, it } from 'vitest';
import { InvalidEventError } from '../../functions/core/transition-table';
import { propose, transition, transitionAll } from '../../functions/core/engine';

const now = Date.parse('2026-11-30T12:00:00Z');
const proposal = {
  operationId: 'op_1',
  runId: 'run_1',
  callId: 'call_1',
  turn: 2,
  toolName: 'charge_card',
  principalId: 'owner',
  requestedBy: 'agent',
  rawArguments: '{"amount":1}',
  inputHash: 'sha256:x',
  idempotencyKey: 'idk_x',
  expiresAtEpoch: 1_900_000_000,
};

describe('the first record of an operation', () => {
  it('is proposed, leased for its submission, and says who asked', () => {
    const { op, events } = propose(proposal, now);
    expect(op).toMatchObject({ ...proposal, state: 'proposed', attempts: 0, version: 0, resumes: 0 });
    expect(Date.parse(op.leaseUntil!)).toBeGreaterThan(now);
    expect(op).not.toHaveProperty('traceparent');
    expect(events).toEqual([
      {
        type: 'operation.proposed',
        operationId: 'op_1',
        callId: 'call_1',
        to: 'proposed',
        detail: { toolName: 'charge_card', turn: 2, inputHash: 'sha256:x', requestedBy: 'agent' },
      },
    ]);
    expect(propose({ ...proposal, traceparent: '00-a-b-01' }, now).op.traceparent).toBe('00-a-b-01');
  });

  it('over budget, settles and reports at once through the engine, with the envelope that says why', () => {
    const { op } = propose(proposal, now);
    const out = transitionAll(
      op,
      [{ type: 'exhaust_budget', message: 'the run reached its tool-call budget (6)' }, { type: 'report' }],
      now,
    );
    expect(out.op).toMatchObject({
      state: 'reported',
      outcome: { kind: 'budget_exhausted', code: 'budget_exhausted' },
      envelope: { status: 'budget_exhausted', message: 'the run reached its tool-call budget (6)', allowed_next_actions: ['stop'] },
      plan: { next: 'done' },
    });
    expect(out.op.leaseUntil).toBeUndefined();
    expect(out.events.map((e) => (e.type === 'state.transition' ? `${e.from}>${e.to}` : e.type))).toEqual([
      'proposed>budget_exhausted',
      'result.recorded',
      'budget_exhausted>reported',
      'result.reported',
    ]);
    expect(out.events.at(-1)?.detail).toEqual({ status: 'budget_exhausted' });
    // Only a call not yet validated can be refused by its budget.
    const validated = { ...op, state: 'validated' as const };
    expect(() => transition(validated, { type: 'exhaust_budget', message: 'x' }, now)).toThrow(InvalidEventError);
  });
});
