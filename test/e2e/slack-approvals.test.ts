import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASK } from '../../functions/core/redact';
import { SlackAction } from '../../functions/slack/message';
import { SlackRefusal } from '../../functions/slack/interactions';
import { slackSignature } from '../../functions/slack/signature';
import { type FakeSlack, slackClick, startFakeSlack } from '../support/slack-server';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce, isEmbedded } from '../support/target';

/**
 * Approvals in Slack through the whole runner: RequestApproval posts a Block Kit message to each mapped
 * approver's direct messages through `@slack/web-api` (against a Slack-shaped server on loopback); signed
 * clicks on `POST /v1/integrations/slack/interactions` decide through the same code as the console and the
 * links; forged, stale and replayed requests, another workspace, the requester and strangers are refused.
 */

const slack = { botToken: 'xoxb-e2e-0123456789', signingSecret: 'e2e-signing-secret-0123456789abcdef', teamId: 'T0E2E' };
const INTERACTIONS = '/v1/integrations/slack/interactions';
// Where a function keeps the config secret for up to 30 s (template mode), a change takes that long to show.
const CONFIG_WAIT_MS = configEditsApplyAtOnce ? 30_000 : 90_000;

let stack: TestStack;
let fake: FakeSlack;
let runId: string;
let operationId: string;
let posts: { channel: string; ts: string; value: string; user: string }[];

const post = async (body: string, headers: Record<string, string>) => {
  const started = Date.now();
  const res = await fetch(`${stack.apiUrl}${INTERACTIONS}`, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text(), ms: Date.now() - started };
};
const click = (user: string, action: 'approve' | 'deny', over: { value?: string; teamId?: string; nowSeconds?: number } = {}) => {
  const target = posts.find((p) => p.user === user) ?? posts[0];
  return slackClick({
    signingSecret: slack.signingSecret,
    teamId: over.teamId ?? slack.teamId,
    userId: user,
    channel: target.channel,
    ts: target.ts,
    button: { action_id: SlackAction[action], value: over.value ?? target.value },
    nowSeconds: over.nowSeconds,
  });
};
/** The next message only `user` sees, after `seen` earlier ones. */
const ephemeralFor = async (user: string, seen: number) =>
  (
    await stack.api.until(
      `a message only ${user} sees`,
      async () => fake.ok('chat.postEphemeral').filter((c) => c.args.user === user),
      (calls) => calls.length > seen,
    )
  )[seen].args.text as string;
const ephemeralCount = (user: string) => fake.ok('chat.postEphemeral').filter((c) => c.args.user === user).length;

beforeAll(async () => {
  fake = await startFakeSlack({ botToken: slack.botToken });
  stack = await startTestStack();
});

afterAll(async () => {
  await stack?.stop();
  await fake?.close();
});

describe.runIf(isEmbedded)('approvals in Slack', () => {
  it('answers 404 while no slack is configured', async () => {
    const signed = slackClick({
      ...slack,
      userId: 'U0ALICE',
      channel: 'D1',
      ts: '1.1',
      button: { action_id: SlackAction.approve, value: 'x' },
    });
    expect((await post(signed.body, signed.headers)).status).toBe(404);
  });

  it(
    'posts a message with the call, its arguments and Approve / Deny to each mapped approver',
    async () => {
      stack.editConfig((config) => {
        config.slack = { ...slack, apiUrl: fake.apiUrl };
        for (const [id, slackUserId] of [
          ['alice', 'U0ALICE'],
          ['bob', 'U0BOB'],
        ])
          config.principals.push({ id, key: `${id}-key-0123456789abcdefgh`, roles: ['approver'], tools: [], slackUserId });
        // The requester is an approver too: its own call is still not its to decide.
        const agent = config.principals.find((p) => p.id === 'agent')!;
        agent.slackUserId = 'U0AGENT';
        agent.roles = ['agent', 'approver'];
        config.principals.find((p) => p.id === 'reviewer')!.slackUserId = 'U0REVIEWER';
      });
      await stack.api.until(
        'the slack config to apply',
        async () => {
          const signed = slackClick({ ...slack, userId: 'U0NOBODY', channel: 'D1', ts: '1.1', button: { action_id: 'other', value: 'x' } });
          return (await post(signed.body, signed.headers)).status;
        },
        (status) => status === 200,
        CONFIG_WAIT_MS,
      );
      runId = await stack.api.createRun(stack.keys.agent, { maxSpendCents: 1_000_000 });
      // In template mode the RequestApproval function may still hold the config without slack: ask until it has it.
      const started = await stack.api.until(
        'an approval request posted to Slack',
        async () => {
          const call = await stack.api.call(stack.keys.agent, runId, {
            callId: `call_slack_${Date.now()}`,
            name: 'charge_card',
            arguments: { amount: 75_000, currency: 'USD', customer: 'cus_slack', description: 'card 4111 1111 1111 1111' },
          });
          expect(call.body.state).toBe('awaiting_approval');
          const id = call.body.operationId as string;
          const posted = await stack.api
            .until(
              'two messages',
              async () => fake.ok('chat.postMessage').filter((c) => JSON.stringify(c.args.blocks).includes(id)),
              (calls) => calls.length === 2,
              configEditsApplyAtOnce ? 30_000 : 5_000,
            )
            .catch(() => []);
          return { id, posted };
        },
        (got) => got.posted.length === 2,
        CONFIG_WAIT_MS,
      );
      operationId = started.id;
      expect(fake.ok('conversations.open').map((c) => c.args.users)).toEqual(expect.arrayContaining(['U0ALICE', 'U0BOB']));
      expect(fake.ok('conversations.open').map((c) => c.args.users)).not.toContain('U0AGENT');
      posts = started.posted.map((c) => {
        const blocks = c.args.blocks as { type: string; elements?: { action_id: string; value: string }[] }[];
        const value = blocks.find((b) => b.type === 'actions')!.elements![0].value;
        return { channel: c.args.channel as string, ts: '', value, user: String(c.args.channel).slice(1) };
      });
      // The message carries the tool, the arguments (the card number masked), the tool's own lines and the hash.
      const op = await stack.api.operation(stack.keys.admin, operationId);
      const blocks = JSON.stringify(started.posted[0].args.blocks);
      for (const part of [
        'Approve charge_card?',
        'amount: 75000',
        'customer: cus_slack',
        `description: card ${MASK}1111`,
        'Charge $750.00',
        op.inputHash,
      ])
        expect(blocks).toContain(part);
      expect(started.posted[0].args.text).toContain('Approval needed: agent asks to run charge_card');
      // Where each message went is kept with the approval (the ts Slack answered), written once both posts are answered.
      const record = stack.deps
        ? await stack.api.until(
            'the messages kept with the approval',
            () => stack.deps!.store.getOperation(operationId),
            (op) => (op?.approval?.slackMessages?.length ?? 0) >= 2,
          )
        : undefined;
      if (record) {
        expect(record.approval?.slackMessages?.map((m) => m.channel).sort()).toEqual(['DU0ALICE', 'DU0BOB']);
        for (const p of posts) p.ts = record.approval!.slackMessages!.find((m) => m.channel === p.channel)!.ts;
      }
      // Two config waits (the API's copy, then RequestApproval's): the suite's 60 s default cannot hold both.
    },
    2 * CONFIG_WAIT_MS + 60_000,
  );

  it('refuses forged, stale, unsigned and oversized requests before reading them, without detail', async () => {
    const good = click('U0ALICE', 'approve');
    const forged = {
      ...good.headers,
      'x-slack-signature': slackSignature('not-the-signing-secret-0123456789', good.headers['x-slack-request-timestamp'], good.body),
    };
    const answers = {
      forged: await post(good.body, forged),
      tampered: await post(good.body.replace('U0ALICE', 'U0BOB'), good.headers),
      stale: await post(
        click('U0ALICE', 'approve', { nowSeconds: Math.floor(Date.now() / 1000) - 301 }).body,
        click('U0ALICE', 'approve', { nowSeconds: Math.floor(Date.now() / 1000) - 301 }).headers,
      ),
      future: await post(
        click('U0ALICE', 'approve', { nowSeconds: Math.floor(Date.now() / 1000) + 301 }).body,
        click('U0ALICE', 'approve', { nowSeconds: Math.floor(Date.now() / 1000) + 301 }).headers,
      ),
      unsigned: await post(good.body, { 'content-type': good.headers['content-type'] }),
    };
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.status, name).toBe(401);
      expect(JSON.parse(answer.text), name).toEqual({ error: { code: 'unauthenticated', message: 'unauthenticated' } });
    }
    const huge = `payload=${'x'.repeat(256 * 1024)}`;
    expect(
      (
        await post(huge, {
          ...good.headers,
          'x-slack-signature': slackSignature(slack.signingSecret, good.headers['x-slack-request-timestamp'], huge),
        })
      ).status,
    ).toBe(413);
    expect((await stack.api.operation(stack.keys.admin, operationId)).state).toBe('awaiting_approval');
  });

  it('shows refusals in Slack: another workspace, a stranger, the requester, a non-approver, a stale button', async () => {
    const cases: [string, { body: string; headers: Record<string, string> }, string][] = [
      ['U0ALICE', click('U0ALICE', 'approve', { teamId: 'T0OTHER' }), SlackRefusal.otherTeam],
      ['U0NOBODY', click('U0NOBODY', 'approve'), SlackRefusal.unmapped],
      [
        'U0AGENT',
        click('U0AGENT', 'approve'),
        'You cannot decide this approval: the requester cannot approve its own operation. Nothing was decided.',
      ],
      [
        'U0REVIEWER',
        click('U0REVIEWER', 'approve'),
        'You cannot decide this approval: this approver may no longer approve. Nothing was decided.',
      ],
      ['U0BOB', click('U0BOB', 'approve', { value: `${posts[0].value.split(' ')[0]} sha256:${'0'.repeat(64)}` }), SlackRefusal.stale],
    ];
    for (const [user, request, said] of cases) {
      const seen = ephemeralCount(user);
      const answer = await post(request.body, request.headers);
      expect(answer.status, user).toBe(200);
      expect(answer.ms, user).toBeLessThan(3000);
      expect(await ephemeralFor(user, seen), user).toBe(said);
    }
    expect((await stack.api.operation(stack.keys.admin, operationId)).state).toBe('awaiting_approval');
  });

  it('decides once on Alice’s click, updates both messages, then says how the call ended; a replay says already decided', async () => {
    const request = click('U0ALICE', 'approve');
    const answer = await post(request.body, request.headers);
    expect(answer.status).toBe(200);
    expect(answer.ms).toBeLessThan(3000);
    const settled = await stack.api.until(
      'the call to settle',
      () => stack.api.operation(stack.keys.admin, operationId),
      (op) => op.state === 'reported',
    );
    expect(settled.approval).toMatchObject({ state: 'approved', decidedBy: 'alice' });
    expect(settled.outcome?.kind ?? settled.envelope?.status).toBeTruthy();
    const updates = await stack.api.until(
      'each message to say how the call ended',
      async () => fake.ok('chat.update').filter((u) => JSON.stringify(u.args.blocks).includes('The call ran and succeeded')),
      (calls) => new Set(calls.map((c) => c.args.channel)).size === 2,
    );
    for (const u of updates) {
      expect(JSON.stringify(u.args.blocks)).toContain('Approved by alice');
      expect((u.args.blocks as { type: string }[]).some((b) => b.type === 'actions')).toBe(false);
    }
    // Slack delivering the same request again (or someone replaying it): decided already, and by whom.
    const seen = ephemeralCount('U0ALICE');
    expect((await post(request.body, request.headers)).status).toBe(200);
    expect(await ephemeralFor('U0ALICE', seen)).toMatch(/^Already decided: Approved by alice at .*\. The call ran and succeeded\.$/);
    const seenBob = ephemeralCount('U0BOB');
    const late = click('U0BOB', 'deny');
    expect((await post(late.body, late.headers)).status).toBe(200);
    expect(await ephemeralFor('U0BOB', seenBob)).toMatch(/^Already decided: Approved by alice/);
    const decided = (await stack.api.trace(stack.keys.agent, runId)).filter(
      (e) => e.type === 'approval.decided' && e.operationId === operationId,
    );
    expect(decided).toHaveLength(1);
    expect(decided[0].detail).toMatchObject({ approverId: 'alice', decision: 'approve' });
  });

  it('keeps the request durable when Slack refuses or rate-limits: a 429 then a 500 are retried, channel_not_found is not', async () => {
    fake.script('chat.postMessage', { status: 429, retryAfter: 1 }, { status: 500 });
    fake.script('conversations.open', { error: 'channel_not_found' });
    const before = fake.calls.length;
    const call = await stack.api.call(stack.keys.agent, runId, {
      callId: 'call_slack_busy',
      name: 'charge_card',
      arguments: { amount: 60_000, currency: 'USD', customer: 'cus_busy' },
    });
    expect(call.body.state).toBe('awaiting_approval');
    const id = call.body.operationId as string;
    await stack.api.until(
      'one message after the retries',
      async () => fake.ok('chat.postMessage').filter((c) => JSON.stringify(c.args.blocks).includes(id)),
      (calls) => calls.length === 1,
    );
    const mine = fake.calls.slice(before).map((c) => `${c.method} ${c.status}${c.error ? ` ${c.error}` : ''}`);
    expect(mine.filter((m) => m.startsWith('conversations.open')).sort()).toEqual([
      'conversations.open 200',
      'conversations.open 200 channel_not_found',
    ]);
    expect(mine.filter((m) => m.startsWith('chat.postMessage'))).toEqual([
      'chat.postMessage 429 ratelimited',
      'chat.postMessage 500 internal_error',
      'chat.postMessage 200',
    ]);
    // Still listed for approvers, whatever Slack did.
    const pending = await stack.api.client(stack.keys.approver).listApprovals();
    expect(pending.map((a) => a.operationId)).toContain(id);
  });
});
