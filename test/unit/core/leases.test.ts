import { describe, expect, it } from 'vitest';
import * as l from '../../../functions/core/leases';

const now = Date.parse('2026-11-30T12:00:00Z');

describe('leases', () => {
  it('give every step a margin, and an attempt its timeout plus the margin (and its backoff)', () => {
    expect(Date.parse(l.stepLease(now)) - now).toBe(l.LEASE_MARGIN_MS);
    expect(Date.parse(l.attemptLease(now, 5_000)) - now).toBe(5_000 + l.LEASE_MARGIN_MS);
    expect(Date.parse(l.attemptLease(now, 5_000, 10)) - now).toBe(10_000 + 5_000 + l.LEASE_MARGIN_MS);
    expect(l.attemptLockMs(5_000)).toBe(5_000 + l.LEASE_MARGIN_MS);
  });

  it('hold a reconciliation through its wait and lookup, and an approval past its expiry', () => {
    expect(Date.parse(l.reconcileLease(now, 3, 2_000)) - now).toBe(3_000 + 2_000 + l.RECONCILE_LEASE_MS);
    const expiresAt = '2026-12-01T12:00:00.000Z';
    expect(Date.parse(l.approvalLease(expiresAt)) - Date.parse(expiresAt)).toBe(l.LEASE_MARGIN_MS);
  });
});
