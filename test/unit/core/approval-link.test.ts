import { describe, expect, it } from 'vitest';
import { signLink, verifyLink } from '../../../functions/core/approval-link';

const secret = 'approval-secret-0123456789abcdef';
const now = Date.parse('2026-11-30T12:00:00Z');
const claims = { approvalId: 'apr_1', approverId: 'alice', expiresAt: now + 60_000, inputHash: 'sha256:abc' };
const expected = { approvalId: 'apr_1', inputHash: 'sha256:abc' };

describe('approval links', () => {
  it('verify for the approver they were signed for, until they expire', () => {
    const sig = signLink(secret, claims);
    expect(verifyLink(secret, sig, expected, now)).toEqual({ ok: true, approverId: 'alice', expiresAt: claims.expiresAt });
    expect(verifyLink(secret, sig, expected, now + 61_000)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('refuse other arguments, another approval, another secret and a tampered approver', () => {
    const sig = signLink(secret, claims);
    expect(verifyLink(secret, sig, { ...expected, inputHash: 'sha256:other' }, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifyLink(secret, sig, { ...expected, approvalId: 'apr_2' }, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifyLink('another-secret-0123456789abcdef', sig, expected, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
    const bob = signLink(secret, { ...claims, approverId: 'bob' });
    const forged = `${bob.split('.')[0]}.${sig.split('.')[1]}`;
    expect(verifyLink(secret, forged, expected, now)).toMatchObject({ ok: false });
  });

  it('call anything malformed a refusal, never an exception', () => {
    for (const bad of ['', 'x', 'a.b.c', `${'a'.repeat(2000)}.${'b'.repeat(43)}`, '..']) {
      expect(verifyLink(secret, bad, expected, now)).toMatchObject({ ok: false, reason: 'malformed' });
    }
  });
});
