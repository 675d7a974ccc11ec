import { z } from 'zod';
import type { SlackConfig } from '../core/config';
import { operationIdOfApproval } from '../core/ids';
import { logOf } from '../core/log';
import type { Deps } from '../core/ports';
import { decideAs, mayDecide } from '../commands/approval-decisions';
import { approvalStatusLine, parseButtonValue, SlackAction } from './message';
import { isSlackRequest } from './signature';
import { cachedSlackClient } from './channel';
import { slackProblem, withSlackBackoff } from './client';

/**
 * `POST /v1/integrations/slack/interactions`: a click on Approve or Deny. Authenticated by Slack's signature
 * alone (no key), checked on the raw bytes before anything is parsed; a verified request is answered 200 at
 * once or after at most `ANSWER_WITHIN_MS` (Slack shows any other status, or none within 3 s, as an error),
 * and every refusal is told to the person who clicked, in Slack, as a message only they see.
 */
export const ANSWER_WITHIN_MS = 2_500;

export type SlackVerdict = { status: 200; work: Promise<void> } | { status: 401 } | { status: 404 };

/** The request as it arrived: the raw body and Slack's two headers. */
export interface SlackRequest {
  body: Uint8Array;
  timestamp: string | undefined;
  signature: string | undefined;
}

const PayloadSchema = z.object({
  type: z.string().max(100),
  team: z.object({ id: z.string().max(100) }).nullish(),
  user: z.object({ id: z.string().max(100), team_id: z.string().max(100).optional() }),
  channel: z.object({ id: z.string().max(100) }).optional(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2000).optional() }))
    .max(25)
    .optional(),
});
type Payload = z.infer<typeof PayloadSchema>;

/** The words a refusal says; the tests and docs/operate.md quote them. */
export const SlackRefusal = {
  otherTeam: 'This runner answers another Slack workspace. Nothing was decided.',
  unknownButton: 'This button is not one of the runner’s. Nothing was decided.',
  stale: 'This message no longer matches the approval (its arguments or the approval changed). Nothing was decided.',
  unmapped: 'Your Slack account is not mapped to an approver of this runner (slackUserId). Nothing was decided.',
} as const;

const clients = cachedSlackClient();

/** Verifies, then hands back the work the click asks for (the route answers 200 when it ends or after `ANSWER_WITHIN_MS`). */
export async function slackInteraction(deps: Deps, request: SlackRequest): Promise<SlackVerdict> {
  const config = await deps.config();
  const slack = config.slack;
  if (!slack) return { status: 404 };
  const verified = isSlackRequest({
    signingSecret: slack.signingSecret,
    timestamp: request.timestamp,
    signature: request.signature,
    body: request.body,
    nowMs: deps.now(),
  });
  if (!verified) return { status: 401 };
  return {
    status: 200,
    work: click(deps, slack, request.body).catch((error) =>
      logOf(deps).warn('slack interaction failed', { error: error instanceof Error ? error.message : String(error) }),
    ),
  };
}

function parsePayload(body: Uint8Array): Payload | undefined {
  const text = new URLSearchParams(Buffer.from(body).toString('utf8')).get('payload');
  if (!text) return undefined;
  try {
    const parsed = PayloadSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function click(deps: Deps, slack: SlackConfig, body: Uint8Array): Promise<void> {
  const payload = parsePayload(body);
  const action =
    payload?.type === 'block_actions' ? payload.actions?.find((a) => Object.values(SlackAction).includes(a.action_id as never)) : undefined;
  if (!payload || !action) return;
  const client = clients(slack);
  const say = async (text: string) => {
    if (!payload.channel) return;
    try {
      await withSlackBackoff(() => client.chat.postEphemeral({ channel: payload.channel!.id, user: payload.user.id, text }));
    } catch (error) {
      logOf(deps).warn('slack refusal not shown', { problem: slackProblem(error) });
    }
  };
  if ((payload.team?.id ?? payload.user.team_id) !== slack.teamId) return say(SlackRefusal.otherTeam);
  const button = action.value ? parseButtonValue(action.value) : undefined;
  if (!button) return say(SlackRefusal.unknownButton);
  const operationId = operationIdOfApproval(button.approvalId);
  const op = operationId ? await deps.store.getOperation(operationId) : undefined;
  if (!op?.approval || op.approval.approvalId !== button.approvalId || op.inputHash !== button.inputHash) return say(SlackRefusal.stale);
  const config = await deps.config();
  const principal = config.principals.find((p) => p.slackUserId === payload.user.id);
  if (!principal) return say(SlackRefusal.unmapped);
  const access = mayDecide(principal, op);
  if (!access.ok) return say(`You cannot decide this approval: ${access.message}. Nothing was decided.`);
  const ended = (now: typeof op) => approvalStatusLine(now) ?? `This call is ${now.state.replaceAll('_', ' ')}; nothing more to decide.`;
  if (op.approval.state !== 'pending' || op.state !== 'awaiting_approval') return say(`Already decided: ${ended(op)}`);
  if (deps.now() >= Date.parse(op.approval.expiresAt))
    return say(`This approval expired at ${op.approval.expiresAt}. Nothing was decided.`);
  const decision = action.action_id === SlackAction.approve ? 'approve' : 'reject';
  // The same decision as the console's and the signed links': once, bound to the frozen arguments read above.
  const result = await decideAs(deps, access, decision);
  if (result.ok) return;
  const now = (await deps.store.getOperation(op.operationId)) ?? op;
  return say(`Already decided: ${ended(now)}`);
}
