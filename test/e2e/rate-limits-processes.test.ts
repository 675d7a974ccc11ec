import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withinOneMinute } from '../support/one-minute';
import { startTestStack, type TestStack } from '../support/stack';
import { configEditsApplyAtOnce } from '../support/target';

/**
 * A perMinute rate limit is held in DynamoDB, not in a process: two API processes (the test stack and a child
 * process with its own memory and engine) share one DynamoDB Local and configuration, as two Lambda containers
 * behind one API would. In `npm run test:slow` (it starts a second stack).
 */
let stack: TestStack;
let second: { apiUrl: string; stop(): Promise<void> } | undefined;

beforeAll(async () => {
  stack = await startTestStack();
  if (!configEditsApplyAtOnce) return;
  stack.editConfig((c) => {
    c.rateLimits = [{ tool: 'send_email', perMinute: 5 }];
  });
  second = await stack.anotherProcess?.();
}, 240_000);
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

// The config is edited at the start: where functions cache the config secret (template mode, AWS) it would apply late.
describe.runIf(configEditsApplyAtOnce)('rate limits across processes', () => {
  it('holds across two processes: concurrent submissions to both admit exactly perMinute in total', async (ctx) => {
    if (!second) ctx.skip();
    const { keys, api } = stack;
    const { admitted, throttled } = await withinOneMinute(async (attempt) => {
      const runId = await api.createRun(keys.agent, { maxToolCalls: 100 });
      const statuses = await Promise.all(
        Array.from({ length: 16 }, async (_, i) => {
          const res = await fetch(`${i % 2 ? second!.apiUrl : stack.apiUrl}/v1/runs/${runId}/tool-calls`, {
            method: 'POST',
            headers: { authorization: `Bearer ${keys.agent}`, 'content-type': 'application/json', prefer: 'wait=0' },
            body: JSON.stringify({
              callId: `rl_p_${attempt}_${i}`,
              turn: 1,
              name: 'send_email',
              arguments: { to: 'a@example.com', subject: 's', body: 'b' },
            }),
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      return { admitted: statuses.filter((s) => s === 200 || s === 202).length, throttled: statuses.filter((s) => s === 429).length };
    });
    expect({ admitted, throttled }).toEqual({ admitted: 5, throttled: 11 });
  });
});
