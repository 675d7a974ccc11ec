import { describe, expect, it } from 'vitest';
import { signWebhookBody, verifyWebhookSignature } from '../../../functions/core/webhook-signature';

const now = 1_796_119_200_000;
const body = '{"type":"approval.requested","approvalId":"apr_1"}';

describe('verifyWebhookSignature', () => {
  it('accepts the header the runner signs with the same secret', () => {
    const header = signWebhookBody('s3cret-of-alice', body, now);
    expect(verifyWebhookSignature({ secret: 's3cret-of-alice', body, header, nowMs: now })).toEqual({ ok: true, timestamp: now / 1000 });
  });

  it('refuses with an empty or missing secret, even a header signed with the empty secret, and never throws', () => {
    const signedWithEmpty = signWebhookBody('', body, now);
    expect(verifyWebhookSignature({ secret: '', body, header: signedWithEmpty, nowMs: now })).toEqual({ ok: false, reason: 'no_secret' });
    expect(verifyWebhookSignature({ secret: undefined, body, header: signedWithEmpty, nowMs: now })).toEqual({
      ok: false,
      reason: 'no_secret',
    });
    // A receiver written in plain JavaScript may pass anything it read from its environment.
    const loose = verifyWebhookSignature as (input: { secret: unknown; body: string; header: string }) => unknown;
    expect(loose({ secret: null, body, header: signedWithEmpty })).toEqual({ ok: false, reason: 'no_secret' });
  });

  it('refuses another secret, a changed body, a stale timestamp and a malformed header', () => {
    const header = signWebhookBody('s3cret-of-alice', body, now);
    expect(verifyWebhookSignature({ secret: 's3cret-of-bob', body, header, nowMs: now })).toEqual({ ok: false, reason: 'mismatch' });
    expect(verifyWebhookSignature({ secret: 's3cret-of-alice', body: `${body} `, header, nowMs: now }).ok).toBe(false);
    expect(verifyWebhookSignature({ secret: 's3cret-of-alice', body, header, nowMs: now + 301_000 })).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(verifyWebhookSignature({ secret: 's3cret-of-alice', body, header: 't=1,v1=zz', nowMs: now })).toEqual({
      ok: false,
      reason: 'malformed',
    });
  });
});
