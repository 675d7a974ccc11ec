import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestStack } from './stack';

/**
 * An email whose outcome is unknown: the upstream commits, then the response never comes. The call answers
 * `outcome_unknown`, and (email has no status lookup) waits for a person.
 */
export async function unknownOutcomeEmail(stack: TestStack) {
  const { api, keys, sandbox } = stack;
  const runId = await api.createRun(keys.agent);
  await sandbox.fault({ route: 'POST /v1/emails', mode: 'commit_then_timeout', delayMs: 20_000 });
  const res = await api.call(keys.agent, runId, {
    callId: 'call_mail',
    name: 'send_email',
    arguments: { to: 'a@example.com', subject: 'Hi', body: 'Hello' },
  });
  return { runId, res };
}

/** A charge started as an MCP task whose upstream hangs: resolves once its attempt is executing. */
export async function hangingChargeTask(stack: TestStack, client: Client) {
  await stack.sandbox.fault({ route: 'POST /v1/charges', mode: 'hang', count: 3 });
  const stream = client.experimental.tasks.callToolStream({
    name: 'charge_card',
    arguments: { amount: 300, currency: 'USD', customer: 'c' },
  });
  const first = await stream.next();
  if (first.value?.type !== 'taskCreated') throw new Error(`expected taskCreated first, got ${JSON.stringify(first.value)}`);
  const taskId = first.value.task.taskId;
  await stack.api.until(
    'the attempt to start',
    () => stack.api.operation(stack.keys.agent, taskId),
    (op) => op.state === 'executing',
  );
  return { stream, taskId };
}
