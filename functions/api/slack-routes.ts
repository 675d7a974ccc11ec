import { slackInteraction, ANSWER_WITHIN_MS } from '../slack/interactions';
import { SLACK_SIGNATURE_HEADER, SLACK_TIMESTAMP_HEADER } from '../slack/signature';
import type { RouteHandlers } from './route-call';

/** Slack's interactivity requests: verified on the raw body, answered 200 within Slack's 3 s (functions/slack/interactions.ts). */
export const slackHandlers = {
  slackInteractions: async ({ c, deps }) => {
    const body = new Uint8Array(await c.req.arrayBuffer());
    const verdict = await slackInteraction(deps, {
      body,
      timestamp: c.req.header(SLACK_TIMESTAMP_HEADER),
      signature: c.req.header(SLACK_SIGNATURE_HEADER),
    });
    if (verdict.status === 404) return c.json({ error: { code: 'not_found', message: 'no such route' } }, 404);
    // No detail: a forger learns nothing of which check failed.
    if (verdict.status === 401) return c.json({ error: { code: 'unauthenticated', message: 'unauthenticated' } }, 401);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([verdict.work, new Promise<void>((r) => (timer = setTimeout(r, ANSWER_WITHIN_MS)))]);
    clearTimeout(timer);
    return c.body(null, 200);
  },
} satisfies Partial<RouteHandlers>;
