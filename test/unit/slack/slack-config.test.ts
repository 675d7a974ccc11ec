import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../../functions/core/config';

const slack = { botToken: 'xoxb-1234-5678-abcdefgh', signingSecret: 'a'.repeat(32), teamId: 'T0123ABCD' };
const approver = (id: string, slackUserId?: string) => ({
  id,
  key: `${id}-key-0123456789abcdef`,
  roles: ['approver'],
  tools: [],
  slackUserId,
});
const issues = (doc: unknown) => {
  const parsed = RunnerConfigSchema.safeParse(doc);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('the slack section and slackUserId', () => {
  it('accepts a complete section and principals mapped to Slack members', () => {
    const doc = { principals: [approver('alice', 'U0ALICE'), approver('bob', 'U0BOB')], slack: { ...slack, channel: 'C0APPROVALS' } };
    expect(issues(doc)).toEqual([]);
    expect(RunnerConfigSchema.parse(doc).principals[0].slackUserId).toBe('U0ALICE');
    expect(issues({ principals: [], slack: { ...slack, apiUrl: 'http://127.0.0.1:9999/api/' } })).toEqual([]);
    expect(issues({ principals: [], slack: { ...slack, apiUrl: 'https://slack.example.com/api/' } })).toEqual([]);
  });

  it('refuses unknown keys, a plain-http apiUrl off this machine, and malformed ids and tokens', () => {
    expect(issues({ principals: [], slack: { ...slack, webhook: 'x' } }).join()).toContain('webhook');
    expect(issues({ principals: [], slack: { ...slack, apiUrl: 'http://slack.example.com/api/' } }).join()).toContain('slack.apiUrl');
    expect(issues({ principals: [], slack: { ...slack, botToken: 'xoxp-user-token-123' } }).join()).toContain('xoxb-');
    expect(issues({ principals: [], slack: { ...slack, teamId: 'U0123' } }).join()).toContain('slack.teamId');
    expect(issues({ principals: [], slack: { ...slack, signingSecret: 'short' } }).join()).toContain('slack.signingSecret');
    expect(issues({ principals: [approver('alice', 'alice@example.com')] }).join()).toContain('principals.0.slackUserId');
  });

  it('refuses two principals with one slackUserId, naming both', () => {
    expect(issues({ principals: [approver('alice', 'U0SAME'), approver('bob', 'U0SAME')] })).toEqual([
      'principals.1.slackUserId: another principal has the slackUserId "U0SAME" (principals.0): each Slack member is one principal',
    ]);
  });
});
