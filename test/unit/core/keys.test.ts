import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signLink, verifyLink } from '../../../functions/core/approval-link';
import { deriveKey, KeyPurpose } from '../../../functions/core/keys';
import { issueSessionId, verifySessionId } from '../../../functions/mcp/session-id';

const SECRET = 'the-configuration-secret-0123456789';
const link = { approvalId: 'apr_1', approverId: 'alice', expiresAt: 2_000, inputHash: 'sha256:a' };

describe('keys per purpose', () => {
  it('derives one 32-byte key per purpose, the same in every process, different for every purpose and secret', () => {
    const purposes = Object.values(KeyPurpose);
    expect(purposes).toEqual(['toolrunner/approval-links/v1', 'toolrunner/mcp-sessions/v1', 'toolrunner/console-sessions/v1']);
    const keys = purposes.map((purpose) => deriveKey(SECRET, purpose));
    for (const key of keys) expect(key).toHaveLength(32);
    expect(new Set(keys.map((k) => k.toString('hex'))).size).toBe(purposes.length);
    // Deterministic: another process derives the very same bytes from the same secret.
    expect(deriveKey(SECRET, KeyPurpose.mcpSessions).equals(keys[1])).toBe(true);
    expect(deriveKey(`${SECRET}x`, KeyPurpose.mcpSessions).equals(keys[1])).toBe(false);
    // No derived key is the secret itself.
    for (const key of keys) expect(key.equals(Buffer.from(SECRET))).toBe(false);
    expect(() => deriveKey('', KeyPurpose.approvalLinks)).toThrow(/empty/);
  });

  it('approval links are signed with the approval-links key, not with the secret or another purpose key', () => {
    const sig = signLink(SECRET, link);
    const [payload, mac] = sig.split('.');
    const message = `${link.approvalId}\n${link.approverId}\n${link.expiresAt}\n${link.inputHash}`;
    const macWith = (key: string | Buffer) => createHmac('sha256', key).update(message).digest('base64url');
    expect(mac).toBe(macWith(deriveKey(SECRET, KeyPurpose.approvalLinks)));
    // A link signed the old way (the raw secret) or with the MCP-session or console key opens nothing.
    for (const key of [SECRET, deriveKey(SECRET, KeyPurpose.mcpSessions), deriveKey(SECRET, KeyPurpose.consoleSessions)])
      expect(verifyLink(SECRET, `${payload}.${macWith(key)}`, link, 1_000)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyLink(SECRET, sig, link, 1_000)).toMatchObject({ ok: true });
  });
});

describe('MCP session ids', () => {
  const session = { runId: 'run_abc', principalId: 'agent' };

  it('carry the run and principal, verify in any process with the same secret, and are unique per initialize', () => {
    const id = issueSessionId(SECRET, session, 1_700_000_000_123);
    expect(id).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    // Visible ASCII only, as the Streamable HTTP transport requires of a session id.
    expect(id).toMatch(/^[\x21-\x7e]+$/);
    expect(verifySessionId(SECRET, id)).toEqual({ ...session, nonce: expect.any(String), issuedAt: 1_700_000_000 });
    const again = issueSessionId(SECRET, session, 1_700_000_000_123);
    expect(again).not.toBe(id);
    expect(verifySessionId(SECRET, again)?.nonce).not.toBe(verifySessionId(SECRET, id)?.nonce);
  });

  it('refuse a tampered id, another secret, another purpose key, and anything malformed, without throwing', () => {
    const id = issueSessionId(SECRET, session, 1_000);
    const [payload, mac] = id.split('.');
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const reencode = (claims: object) => Buffer.from(JSON.stringify(claims)).toString('base64url');
    // Another run or another principal under the same MAC.
    expect(verifySessionId(SECRET, `${reencode({ ...decoded, r: 'run_other' })}.${mac}`)).toBeUndefined();
    expect(verifySessionId(SECRET, `${reencode({ ...decoded, p: 'admin' })}.${mac}`)).toBeUndefined();
    // One flipped character of the MAC.
    const flipped = `${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`;
    expect(verifySessionId(SECRET, `${payload}.${flipped}`)).toBeUndefined();
    expect(verifySessionId('another-secret-0123456789abcdef', id)).toBeUndefined();
    // The same payload signed with the approval-links key (a link's MAC) is no session id.
    const linkMac = createHmac('sha256', deriveKey(SECRET, KeyPurpose.approvalLinks)).update(payload).digest('base64url');
    expect(verifySessionId(SECRET, `${payload}.${linkMac}`)).toBeUndefined();
    // A correctly signed payload that is not exactly the claims object is refused too.
    const sign = (p: string) =>
      `${p}.${createHmac('sha256', deriveKey(SECRET, KeyPurpose.mcpSessions)).update(`mcp-session\n${p}`).digest('base64url')}`;
    expect(verifySessionId(SECRET, sign(reencode({ ...decoded, extra: 1 })))).toBeUndefined();
    expect(verifySessionId(SECRET, sign(reencode({ ...decoded, v: 2 })))).toBeUndefined();
    expect(verifySessionId(SECRET, sign(Buffer.from('not json').toString('base64url')))).toBeUndefined();
    expect(verifySessionId(SECRET, sign(reencode({ ...decoded, r: 'run_other' })))).toMatchObject({ runId: 'run_other' });
    for (const bad of [
      '',
      '.',
      `${id}.`,
      `.${id}`,
      `${id}.x`,
      `${id} `,
      `${payload}.${mac}=`,
      `${'a'.repeat(5000)}.${mac}`,
      'x'.repeat(100),
    ])
      expect(verifySessionId(SECRET, bad)).toBeUndefined();
  });
});
