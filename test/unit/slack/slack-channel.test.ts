import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../../functions/core/config';
import type { OperationRecord, SlackMessageRef } from '../../../functions/core/model';
import type { ApprovalRequest, ConfigSource } from '../../../functions/core/ports';
import { slackChannel } from '../../../functions/slack/channel';
import { slackClient } from '../../../functions/slack/client';
import { operation } from '../../support/records';
import { type FakeSlack, startFakeSlack } from '../../support/slack-server';

/** The Slack channel through the official client against a Slack-shaped server on loopback. */

const botToken = 'xoxb-test-0123456789';
let fake: FakeSlack;
let op: OperationRecord;
let noted: { operationId: string; messages: SlackMessageRef[] }[];
let channelId: string | undefined;

const configSource =
  (token = botToken): ConfigSource =>
  async () => ({
    ...RunnerConfigSchema.parse({
      principals: [
        { id: 'agent', key: 'agent-key-0123456789abcdef', roles: ['agent'], tools: '*' },
        { id: 'alice', key: 'alice-key-0123456789abcdef', roles: ['approver'], tools: [], slackUserId: 'U0ALICE' },
        { id: 'bob', key: 'bob-key-0123456789abcdefgh', roles: ['approver'], tools: [], slackUserId: 'U0BOB' },
        { id: 'carol', key: 'carol-key-0123456789abcdef', roles: ['approver'], tools: [] },
      ],
      slack: {
        botToken: token,
        signingSecret: 's'.repeat(32),
        teamId: 'T0TEAM',
        apiUrl: fake.apiUrl,
        ...(channelId ? { channel: channelId } : {}),
      },
    }),
    approvalSecret: 'a'.repeat(32),
  });

const request: ApprovalRequest = {
  approvalId: 'apr_op_1',
  operationId: 'op_1',
  runId: 'run_1',
  toolName: 'charge_card',
  requestedBy: 'agent',
  summary: 'agent asks to run charge_card',
  expiresAt: '2026-12-08T12:00:00.000Z',
  links: ['alice', 'bob', 'carol'].map((approverId) => ({
    approverId,
    url: `https://runner.example/v1/approvals/apr_op_1?sig=${approverId}`,
  })),
};

const channel = (token?: string) =>
  slackChannel({
    config: configSource(token),
    operation: async () => op,
    secretFields: () => ['card'],
    noteMessages: async (operationId, messages) => {
      noted.push({ operationId, messages });
      op = { ...op, approval: { ...op.approval!, slackMessages: [...(op.approval!.slackMessages ?? []), ...messages] } };
    },
    backoff: { baseMs: 20, capMs: 50 },
  });

beforeAll(async () => {
  fake = await startFakeSlack({ botToken });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.calls.length = 0;
  noted = [];
  channelId = undefined;
  op = operation({
    state: 'awaiting_approval',
    principalId: 'agent',
    frozenArguments: JSON.stringify({ amount: 75_000, card: 'tok_secret' }),
    approval: { approvalId: 'apr_op_1', state: 'pending', expiresAt: request.expiresAt },
  });
});

describe('the Slack channel', () => {
  it('posts to each mapped approver’s direct messages and keeps where each went', async () => {
    expect(await channel().approvalRequested!(request)).toBe(0);
    expect(
      fake
        .ok('conversations.open')
        .map((c) => c.args.users)
        .sort(),
    ).toEqual(['U0ALICE', 'U0BOB']);
    const posts = fake.ok('chat.postMessage');
    expect(posts.map((c) => c.args.channel).sort()).toEqual(['DU0ALICE', 'DU0BOB']);
    for (const post of posts) {
      expect(post.args.text).toContain('Approval needed');
      expect(JSON.stringify(post.args.blocks)).toContain('amount: 75000');
      expect(JSON.stringify(post.args.blocks)).not.toContain('tok_secret');
      // No approver's signed link goes to Slack: the buttons decide there.
      expect(JSON.stringify(post.args)).not.toContain('sig=');
    }
    expect(noted).toHaveLength(1);
    expect(noted[0].messages.map((m) => m.channel).sort()).toEqual(['DU0ALICE', 'DU0BOB']);

    // A decision updates every message it posted.
    op = {
      ...op,
      state: 'executing',
      approval: { ...op.approval!, state: 'approved', decidedBy: 'alice', decidedAt: '2026-12-07T13:00:00.000Z' },
    };
    expect(await channel().notice!({ type: 'approval.decided', ...request, decision: 'approved', decidedBy: 'alice' })).toBe(0);
    const updates = fake.ok('chat.update');
    expect(updates.map((u) => `${u.args.channel} ${u.args.ts}`).sort()).toEqual(
      noted[0].messages.map((m) => `${m.channel} ${m.ts}`).sort(),
    );
    for (const u of updates) expect(JSON.stringify(u.args.blocks)).toContain('Approved by alice');
  });

  it('posts once to the configured channel instead', async () => {
    channelId = 'C0APPROVALS';
    expect(await channel().approvalRequested!(request)).toBe(0);
    expect(fake.ok('conversations.open')).toEqual([]);
    expect(fake.ok('chat.postMessage').map((c) => c.args.channel)).toEqual(['C0APPROVALS']);
  });

  it('retries a 429 after its Retry-After and a 500, once each, through the client that makes one attempt', async () => {
    fake.script('chat.postMessage', { status: 429, retryAfter: 1 }, { status: 500 });
    channelId = 'C0APPROVALS';
    const started = Date.now();
    expect(await channel().approvalRequested!(request)).toBe(0);
    expect(fake.calls.filter((c) => c.method === 'chat.postMessage').map((c) => c.status)).toEqual([429, 500, 200]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('counts Slack’s refusals (channel_not_found, a wrong token) without retrying them', async () => {
    fake.script('chat.postMessage', { error: 'channel_not_found' });
    channelId = 'C0GONE';
    expect(await channel().approvalRequested!(request)).toBe(1);
    expect(fake.calls.map((c) => `${c.method} ${c.error}`)).toEqual(['chat.postMessage channel_not_found']);
    expect(noted).toEqual([]);
    fake.calls.length = 0;
    channelId = undefined;
    expect(await channel('xoxb-wrong-0123456789').approvalRequested!(request)).toBe(2);
    expect(fake.calls.map((c) => `${c.method} ${c.error}`)).toEqual(['conversations.open invalid_auth', 'conversations.open invalid_auth']);
  });

  it('configures the official client to make one attempt, reject rate limits and time out', () => {
    const client = slackClient({ botToken, apiUrl: 'http://127.0.0.1:1/api' }) as unknown as Record<string, unknown>;
    expect(client.slackApiUrl).toBe('http://127.0.0.1:1/api/');
    expect(client.retryConfig).toEqual({ retries: 0 });
    expect(client.rejectRateLimitedCalls).toBe(true);
    expect(client.timeout).toBe(5000);
  });
});
