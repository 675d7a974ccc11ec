import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Slack's request signing (api.slack.com/authentication/verifying-requests-from-slack): `v0=` and the hex
 * HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<raw body>` under the app's signing secret. Checked on the
 * bytes as they arrived, before anything of the body is parsed.
 */
export const SLACK_SIGNATURE_HEADER = 'X-Slack-Signature';
export const SLACK_TIMESTAMP_HEADER = 'X-Slack-Request-Timestamp';

/** How far a request's timestamp may be from now: Slack's own advice, against replays of an old request. */
export const SLACK_TIMESTAMP_TOLERANCE_SECONDS = 300;

/** The `X-Slack-Signature` value for `body` sent at `timestampSeconds` (Slack's side; the tests sign with it). */
export function slackSignature(signingSecret: string, timestampSeconds: number | string, body: Uint8Array | string): string {
  const mac = createHmac('sha256', signingSecret);
  mac.update(`v0:${timestampSeconds}:`);
  mac.update(body);
  return `v0=${mac.digest('hex')}`;
}

/** Whether a request is Slack's, sent within the tolerance of `nowMs`. Says no more than yes or no. */
export function isSlackRequest(input: {
  signingSecret: string;
  timestamp: string | undefined;
  signature: string | undefined;
  body: Uint8Array;
  nowMs: number;
}): boolean {
  const { timestamp, signature } = input;
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || !signature || !/^v0=[0-9a-f]{64}$/.test(signature)) return false;
  if (Math.abs(input.nowMs / 1000 - Number(timestamp)) > SLACK_TIMESTAMP_TOLERANCE_SECONDS) return false;
  const expected = Buffer.from(slackSignature(input.signingSecret, timestamp, input.body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
