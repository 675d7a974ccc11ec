import { describe, expect, it } from 'vitest';
import { timelineMainOf, timelinePage } from '../../functions/html/timeline-page';
import {
  csrfToken,
  csrfTokenMatches,
  issueSession,
  issueTokenSession,
  SESSION_LIFETIME_SECONDS,
  verifySession,
} from '../../functions/console/session';
import { RunnerConfigSchema } from '../../functions/core/config';
import { formatCents } from '../../functions/core/format';
import { approvalSummary } from '../../functions/core/notices';
import { formatTimeline, timelineModel, type TimelineEvent } from '../../functions/core/timeline';

const config = () => ({
  ...RunnerConfigSchema.parse({
    approvalSecret: 'the-config-secret-0123456789',
    principals: [{ id: 'alice', key: 'alice-key-0123456789abcdef', roles: ['approver'], tools: [] }],
  }),
  approvalSecret: 'the-config-secret-0123456789',
});
const now = Date.parse('2026-12-01T10:00:00Z');
const alice = { id: 'alice', key: 'alice-key-0123456789abcdef' };

describe('console sessions', () => {
  it('carry the principal and a fingerprint of its key, never the key, and verify until they expire', () => {
    const c = config();
    const cookie = issueSession(c.approvalSecret, alice, now);
    expect(cookie).not.toContain('alice-key');
    expect(Buffer.from(cookie.split('.')[0], 'base64url').toString()).not.toContain('alice-key');
    expect(verifySession(c, cookie, now)).toMatchObject({ kind: 'key', principal: { id: 'alice' } });
    expect(verifySession(c, cookie, now + (SESSION_LIFETIME_SECONDS - 1) * 1000)).toBeDefined();
    expect(verifySession(c, cookie, now + SESSION_LIFETIME_SECONDS * 1000)).toBeUndefined();
  });

  it('end when the key changes, the principal goes, or the secret changes, and refuse any tampering', () => {
    const c = config();
    const cookie = issueSession(c.approvalSecret, alice, now);
    const rotated = { ...c, principals: [{ ...c.principals[0], key: 'alice-new-key-0123456789' }] };
    expect(verifySession(rotated, cookie, now)).toBeUndefined();
    expect(verifySession({ ...c, principals: [] }, cookie, now)).toBeUndefined();
    expect(verifySession({ ...c, approvalSecret: 'another-config-secret-0123' }, cookie, now)).toBeUndefined();
    const [payload, mac] = cookie.split('.');
    const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('"alice"', '"admin"')).toString('base64url');
    for (const bad of [
      `${forged}.${mac}`,
      `${payload}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      payload,
      '',
      'a.b.c',
      `${payload}.${mac}`.repeat(40),
    ])
      expect(verifySession(c, bad, now)).toBeUndefined();
  });

  it('opened with an access token, end when the token expires and carry the token for the console to act with', () => {
    const c = config();
    const tokenExpires = now + 600_000;
    const cookie = issueTokenSession(c.approvalSecret, 'oauth:robot', 'eyJ.a.b', tokenExpires, now);
    expect(verifySession(c, cookie, now)).toMatchObject({ kind: 'token', token: 'eyJ.a.b', session: { principalId: 'oauth:robot' } });
    expect(verifySession(c, cookie, tokenExpires - 1000)).toBeDefined();
    expect(verifySession(c, cookie, tokenExpires)).toBeUndefined();
    expect(verifySession({ ...c, approvalSecret: 'another-config-secret-0123' }, cookie, now)).toBeUndefined();
  });

  it('give each session its own CSRF token, which only that session accepts', () => {
    const c = config();
    const a = verifySession(c, issueSession(c.approvalSecret, alice, now), now)!.session;
    const b = verifySession(c, issueSession(c.approvalSecret, alice, now), now)!.session;
    expect(csrfToken(c.approvalSecret, a)).not.toBe(csrfToken(c.approvalSecret, b));
    expect(csrfTokenMatches(c.approvalSecret, a, csrfToken(c.approvalSecret, a))).toBe(true);
    expect(csrfTokenMatches(c.approvalSecret, a, csrfToken(c.approvalSecret, b))).toBe(false);
    expect(csrfTokenMatches(c.approvalSecret, a, undefined)).toBe(false);
    expect(csrfTokenMatches(c.approvalSecret, a, '')).toBe(false);
  });
});

describe('amounts and hidden characters, one way everywhere', () => {
  const at = (ms: number) => new Date(now + ms).toISOString();
  const events: TimelineEvent[] = [
    {
      seq: 1,
      at: at(0),
      runId: 'run_1',
      operationId: 'op_1',
      callId: 'call_1',
      type: 'operation.proposed',
      detail: { toolName: 'charge_card' },
    },
    { seq: 2, at: at(1), runId: 'run_1', operationId: 'op_1', type: 'policy.decision', detail: { decision: 'allow', costCents: 60_000 } },
    {
      seq: 3,
      at: at(2),
      runId: 'run_1',
      operationId: 'op_1',
      type: 'approval.decided',
      detail: { decision: 'reject', approverId: 'bob', reason: 'refund \u202Egpj.exe\u200B</main><script>x</script>' },
    },
  ];

  it('formats spend in dollars as the approval page does, in the timeline, its terminal text and notifications', () => {
    expect(formatCents(60_000)).toBe('$600.00');
    expect(formatTimeline(events)).toContain('cost $600.00');
    expect(approvalSummary({ toolName: 'charge_card', runId: 'run_1', risk: 'irreversible_write', costCents: 60_000 }, 'agent')).toBe(
      "agent asks to run charge_card (irreversible write) in run run_1; it counts $600.00 against the run's spend budget.",
    );
  });

  it('shows bidi and zero-width characters as <U+202E> on the timeline page and in the terminal, and escapes the rest', () => {
    const page = timelinePage(timelineModel(events), 'admin');
    expect(page).toContain('<span class="cc">&lt;U+202E&gt;</span>gpj.exe<span class="cc">&lt;U+200B&gt;</span>');
    expect(page).not.toMatch(/[\u202E\u200B]/);
    expect(page).not.toContain('<script>');
    expect(formatTimeline(events)).toContain('refund <U+202E>gpj.exe<U+200B>');
    // The console embeds the page's <main>: what a person wrote cannot end it early.
    const main = timelineMainOf(page)!;
    expect(main.startsWith('<main id="timeline">')).toBe(true);
    expect(main.endsWith('</main>')).toBe(true);
    expect(main).toContain('&lt;/main&gt;&lt;script&gt;');
    expect(timelineMainOf('<html>no timeline</html>')).toBeUndefined();
  });
});
