import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeApp } from '../../../functions/api/app';
import { createRun } from '../../../functions/commands/submit';
import type { RunnerConfig } from '../../../functions/core/config';
import type { Deps } from '../../../functions/core/ports';
import { makeRegistry } from '../../../functions/core/tool-spec';
import { ANSWER_WITHIN_MS } from '../../../functions/slack/interactions';
import { buttonValue, SlackAction } from '../../../functions/slack/message';
import { idleLifecycle, memoryStore } from '../../support/memory-store';
import { operation } from '../../support/records';
import { type FakeSlack, slackClick, startFakeSlack } from '../../support/slack-server';

/** The interactions route in process: what the embedded stack cannot reach quickly (an expired approval, a decision that hangs). */

const slack = { botToken: 'xoxb-unit-0123456789', signingSecret: 'unit-signing-secret-0123456789ab', teamId: 'T0UNIT' };
let fake: FakeSlack;
let now: number;
let hang: boolean;

async function world() {
  now = Date.parse('2026-12-07T12:00:00Z');
  const store = memoryStore(() => now);
  const config = {
    principals: [
      { id: 'owner', key: 'owner-key-0123456789', roles: ['agent'], tools: '*' },
      { id: 'alice', key: 'alice-key-0123456789', roles: ['approver'], tools: [], slackUserId: 'U0ALICE' },
    ],
    approvalSecret: 's'.repeat(32),
    approvalTtlSeconds: 600,
    slack: { ...slack, apiUrl: fake.apiUrl },
  } as RunnerConfig & { approvalSecret: string };
  const deps: Deps = {
    store,
    tools: makeRegistry([]),
    config: async () => config,
    // A decision whose hand-back to the waiting execution never returns (a stalled Step Functions call).
    lifecycle: { ...idleLifecycle, sendTaskSuccess: () => (hang ? new Promise(() => undefined) : Promise.resolve()) },
    notifier: { approvalRequested: async () => undefined },
    now: () => now,
    random: () => 0.5,
    publicBaseUrl: 'http://runner',
  };
  const run = await createRun(deps, { id: 'owner', roles: ['agent'], tools: '*' }, undefined);
  const op = operation({
    operationId: 'op_slack',
    runId: run.runId,
    principalId: 'owner',
    state: 'awaiting_approval',
    inputHash: 'sha256:abc',
    frozenArguments: '{"amount":1}',
    approvalTaskToken: 'token',
    approval: { approvalId: 'apr_slack', state: 'pending', expiresAt: '2026-12-07T12:10:00.000Z' },
  });
  store.ops.set(op.operationId, op);
  return { app: makeApp(deps), store };
}

const click = (action: 'approve' | 'deny') =>
  slackClick({
    ...slack,
    userId: 'U0ALICE',
    channel: 'DU0ALICE',
    ts: '1.1',
    button: { action_id: SlackAction[action], value: buttonValue('apr_slack', 'sha256:abc') },
    nowSeconds: Math.floor(now / 1000),
  });

beforeAll(async () => {
  fake = await startFakeSlack({ botToken: slack.botToken });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.calls.length = 0;
  hang = false;
});

describe('Slack interactions in process', () => {
  it('tells the clicker that the approval expired, and decides nothing', async () => {
    const { app, store } = await world();
    now = Date.parse('2026-12-07T12:10:00Z');
    const request = click('approve');
    const res = await app.request('/v1/integrations/slack/interactions', { method: 'POST', headers: request.headers, body: request.body });
    expect(res.status).toBe(200);
    expect(fake.ok('chat.postEphemeral').map((c) => c.args.text)).toEqual([
      'This approval expired at 2026-12-07T12:10:00.000Z. Nothing was decided.',
    ]);
    expect(store.ops.get('op_slack')!.approval!.state).toBe('pending');
  });

  it('answers 200 within Slack’s 3 s even when the decision hangs', async () => {
    const { app, store } = await world();
    hang = true;
    const request = click('approve');
    const started = Date.now();
    const res = await app.request('/v1/integrations/slack/interactions', { method: 'POST', headers: request.headers, body: request.body });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(ANSWER_WITHIN_MS - 50);
    expect(Date.now() - started).toBeLessThan(3000);
    // The decision itself is recorded (once) before the hand-back that hangs.
    expect(store.ops.get('op_slack')!.approval).toMatchObject({ state: 'approved', decidedBy: 'alice' });
  });

  it('answers a verified request that is not a click of ours 200, and does nothing', async () => {
    const { app, store } = await world();
    const request = slackClick({
      ...slack,
      userId: 'U0ALICE',
      channel: 'D1',
      ts: '1.1',
      button: { action_id: 'other', value: 'x' },
      nowSeconds: Math.floor(now / 1000),
    });
    const res = await app.request('/v1/integrations/slack/interactions', { method: 'POST', headers: request.headers, body: request.body });
    expect(res.status).toBe(200);
    expect(fake.calls).toEqual([]);
    expect(store.ops.get('op_slack')!.approval!.state).toBe('pending');
  });
});
