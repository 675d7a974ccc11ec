import { describe, expect, it } from 'vitest';
import { envelopeFor, succeededSays } from '../../../functions/core/envelope';

const op = { callId: 'call_1', operationId: 'op_1' };

describe('envelopes', () => {
  it('name the call and the operation, and never carry a result or a key of the record', () => {
    const env = envelopeFor(op, { kind: 'succeeded', result: { bytes: 2, sha256: 'sha256:x' } as never });
    expect(env).toEqual({ call_id: 'call_1', logical_operation_id: 'op_1', ...succeededSays() });
    expect(JSON.stringify(env)).not.toMatch(/idempotency|sha256/);
  });

  it('say what the model may do next for each outcome', () => {
    expect(envelopeFor(op, { kind: 'rejected', code: 'invalid_arguments', message: 'm' })).toMatchObject({
      status: 'rejected',
      code: 'invalid_arguments',
      allowed_next_actions: expect.arrayContaining(['retry_with_new_arguments']),
    });
    const unknown = envelopeFor(op, { kind: 'outcome_unknown', code: 'timeout_unknown', message: 'timed out' });
    expect(unknown).toMatchObject({ status: 'outcome_unknown', code: 'timeout_unknown' });
    expect(unknown.message).toContain('do not repeat the call');
    expect(envelopeFor(op, { kind: 'failed_retryable', code: 'upstream_unavailable', message: 'm' }).status).toBe('failed');
    expect(envelopeFor(op, { kind: 'budget_exhausted', code: 'budget_exhausted', message: 'm' }).allowed_next_actions).toEqual(['stop']);
    expect(envelopeFor(op, { kind: 'cancelled', code: 'cancelled', message: 'm' }).status).toBe('cancelled');
  });

  it('hands out a fresh copy of what every success says', () => {
    const a = succeededSays();
    a.allowed_next_actions.push('mutated');
    expect(succeededSays().allowed_next_actions).not.toContain('mutated');
  });
});
