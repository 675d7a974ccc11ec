import { describe, expect, it } from 'vitest';
import * as ids from '../../../functions/core/ids';

describe('ids', () => {
  it('derive one operation id per (runId, callId), short and made of API-safe characters', () => {
    const a = ids.operationIdFor('run_1', 'call_1');
    expect(ids.operationIdFor('run_1', 'call_1')).toBe(a);
    expect(ids.operationIdFor('run_1', 'call_2')).not.toBe(a);
    // The separator keeps ("run_1a", "b") apart from ("run_1", "ab").
    expect(ids.operationIdFor('run_1a', 'b')).not.toBe(ids.operationIdFor('run_1', 'ab'));
    expect(a).toMatch(/^op_[A-Za-z0-9]{26}$/);
  });

  it('map an operation to its approval and back, and nothing else', () => {
    const op = ids.operationIdFor('run_1', 'call_1');
    expect(ids.operationIdOfApproval(ids.approvalIdFor(op))).toBe(op);
    expect(ids.operationIdOfApproval('op_1')).toBeUndefined();
  });

  it('make random run ids and 256-bit idempotency keys', () => {
    expect(ids.newRunId()).not.toBe(ids.newRunId());
    const key = ids.newIdempotencyKey();
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(key).not.toBe(ids.newIdempotencyKey());
  });

  it('name each submission that takes a rate-limit slot on its own, under its operation', () => {
    const holder = ids.newRateSlotHolder('op_1');
    expect(holder).toMatch(/^op_1\.[A-Za-z0-9_-]{12}$/);
    expect(holder).not.toBe(ids.newRateSlotHolder('op_1'));
  });
});
