import { describe, expect, it } from 'vitest';
import { isSlackRequest, slackSignature } from '../../../functions/slack/signature';

const secret = '8f742231b10e8888abcd99yyyzzz85a5';
const body = new TextEncoder().encode('payload=%7B%22type%22%3A%22block_actions%22%7D');
const nowMs = 1_765_000_000_000;
const ts = String(nowMs / 1000);

describe('Slack request signatures', () => {
  it('matches the example in Slack’s documentation', () => {
    const docBody =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    expect(slackSignature(secret, 1531420618, docBody)).toBe('v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503');
  });

  it('accepts a signed, fresh request and refuses forged, stale, future, malformed and missing ones', () => {
    const good = { signingSecret: secret, timestamp: ts, signature: slackSignature(secret, ts, body), body, nowMs };
    expect(isSlackRequest(good)).toBe(true);
    expect(isSlackRequest({ ...good, nowMs: nowMs + 300_000 })).toBe(true);
    expect(isSlackRequest({ ...good, signature: slackSignature('another-secret-0123456789', ts, body) })).toBe(false);
    expect(isSlackRequest({ ...good, body: new TextEncoder().encode('payload=%7B%7D') })).toBe(false);
    expect(isSlackRequest({ ...good, nowMs: nowMs + 301_000 })).toBe(false);
    expect(isSlackRequest({ ...good, nowMs: nowMs - 301_000 })).toBe(false);
    const old = String(nowMs / 1000 - 301);
    expect(isSlackRequest({ ...good, timestamp: old, signature: slackSignature(secret, old, body) })).toBe(false);
    expect(isSlackRequest({ ...good, signature: good.signature.toUpperCase() })).toBe(false);
    expect(isSlackRequest({ ...good, signature: `v1=${good.signature.slice(3)}` })).toBe(false);
    expect(isSlackRequest({ ...good, signature: undefined })).toBe(false);
    expect(isSlackRequest({ ...good, timestamp: undefined })).toBe(false);
    expect(isSlackRequest({ ...good, timestamp: `${ts}.5` })).toBe(false);
  });
});
