import { describe, expect, it } from 'vitest';
import { signLink, verifyLink } from '../../../functions/core/approval-link';
import { decidingPrincipal, requesterGrantOf } from '../../../functions/core/policy';

/**
 * Which principal object a decision uses: a config principal as the config says now, a token principal
 * (`oauth:<claim>`, in no config) as it authenticated, whether the decision is made in the request, before an
 * attempt (from what the operation kept) or through an approval link (from what the link carries).
 */
const config = {
  principals: [
    { id: 'alice', key: 'k'.repeat(24), roles: ['agent' as const], tools: ['charge_card'], attributes: { tier: 'suspended' } },
    { id: 'bob', oauthSubject: 'https://idp|bob', roles: ['approver' as const], tools: [] },
  ],
};
const grant = { roles: ['agent' as const], tools: ['get_order'], attributes: { tier: 'gold' } };

describe('the principal a decision uses', () => {
  it('is a config principal as the config says now, whatever was kept of it', () => {
    expect(decidingPrincipal(config, 'alice', grant)).toEqual({
      id: 'alice',
      roles: ['agent'],
      tools: ['charge_card'],
      attributes: { tier: 'suspended' },
    });
    expect(decidingPrincipal(config, 'bob')).toEqual({ id: 'bob', roles: ['approver'], tools: [] });
    // Removed from the config: gone, even where a snapshot exists (revocation holds).
    expect(decidingPrincipal(config, 'carol', grant)).toBeUndefined();
  });

  it('is a token principal as it authenticated, and nothing without that', () => {
    expect(decidingPrincipal(config, 'oauth:svc-1', grant)).toEqual({ id: 'oauth:svc-1', ...grant });
    expect(decidingPrincipal(config, 'oauth:svc-1', { roles: ['agent'], tools: '*' })).toEqual({
      id: 'oauth:svc-1',
      roles: ['agent'],
      tools: '*',
    });
    expect(decidingPrincipal(config, 'oauth:svc-1')).toBeUndefined();
  });

  it('is kept with an operation for a token principal only', () => {
    expect(requesterGrantOf({ id: 'oauth:svc-1', ...grant })).toEqual({ requesterGrant: grant });
    expect(requesterGrantOf({ id: 'oauth:svc-2', roles: [], tools: [] })).toEqual({ requesterGrant: { roles: [], tools: [] } });
    expect(requesterGrantOf({ id: 'alice', roles: ['agent'], tools: '*', attributes: { tier: 'x' } })).toEqual({});
  });
});

describe('approval links for token approvers', () => {
  const secret = 's'.repeat(32);
  const claims = { approvalId: 'apr_op_1', expiresAt: 1893456000000, inputHash: 'a'.repeat(64) };
  const expected = { approvalId: claims.approvalId, inputHash: claims.inputHash };
  const now = 1893456000000 - 60_000;

  it('a config approver’s link is what it always was, byte for byte, and carries no roles', () => {
    const sig = signLink(secret, { ...claims, approverId: 'approver' });
    expect(sig).toBe('eyJhIjoiYXBwcm92ZXIiLCJlIjoxODkzNDU2MDAwMDAwfQ.QO5ObscLQaoh97d8yw6txu4-NcbKnBjoqz_ZvMcAdrw');
    expect(verifyLink(secret, sig, expected, now)).toEqual({ ok: true, approverId: 'approver', expiresAt: claims.expiresAt });
  });

  it('a token approver’s link carries its roles, signed: they decide, and cannot be changed', () => {
    const sig = signLink(secret, { ...claims, approverId: 'oauth:bob', roles: ['approver'] });
    const check = verifyLink(secret, sig, expected, now);
    expect(check).toEqual({ ok: true, approverId: 'oauth:bob', expiresAt: claims.expiresAt, roles: ['approver'] });
    expect(decidingPrincipal(config, 'oauth:bob', check.ok ? { roles: check.roles ?? [], tools: [] } : undefined)).toEqual({
      id: 'oauth:bob',
      roles: ['approver'],
      tools: [],
    });
    // Another role set under the same MAC, or the roles dropped: not a link the runner signed.
    const [payload, mac] = sig.split('.');
    const widened = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), r: ['admin'] })).toString(
      'base64url',
    );
    expect(verifyLink(secret, `${widened}.${mac}`, expected, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
    const dropped = Buffer.from(JSON.stringify({ a: 'oauth:bob', e: claims.expiresAt })).toString('base64url');
    expect(verifyLink(secret, `${dropped}.${mac}`, expected, now)).toMatchObject({ ok: false, reason: 'bad_signature' });
    // Roles that are no roles: malformed.
    const strange = Buffer.from(JSON.stringify({ a: 'oauth:bob', e: claims.expiresAt, r: ['root'] })).toString('base64url');
    expect(verifyLink(secret, `${strange}.${mac}`, expected, now)).toMatchObject({ ok: false, reason: 'malformed' });
  });
});
