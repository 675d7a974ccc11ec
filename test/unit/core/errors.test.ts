import { describe, expect, it } from 'vitest';
import * as e from '../../../functions/core/errors';

describe('errors', () => {
  it('keep the names the state machine matches, even through a bundle that renames classes', () => {
    expect(new e.ApprovalRejectedError('no').name).toBe(e.ErrorNames.ApprovalRejected);
    expect(new e.OperationMovedError('moved').name).toBe(e.ErrorNames.OperationMoved);
    expect(e.ASL_ERROR_NAMES).toEqual(Object.values(e.ErrorNames));
  });

  it('recognise upstream and transport errors by name, so a copy from another bundle counts too', () => {
    const http = new e.UpstreamHttpError(503, undefined, 2, 'upstream answered 503');
    expect(e.isUpstreamHttpError(http)).toBe(true);
    expect(e.isTransportError(http)).toBe(false);
    const foreign = Object.assign(new Error('x'), { name: 'TransportError', reason: 'reset', requestSent: true });
    expect(e.isTransportError(foreign)).toBe(true);
    expect(e.isMalformedAnswer(new e.MalformedAnswerError('bad'))).toBe(true);
  });

  it('turn anything thrown into an Error', () => {
    expect(e.ensureError('boom').message).toBe('boom');
    expect(e.ensureError({ weird: true }).message).toBe('non-error thrown');
    const error = new Error('same');
    expect(e.ensureError(error)).toBe(error);
  });
});
