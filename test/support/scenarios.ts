import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { decideApproval } from './people';
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

/**
 * A $700 charge run as an MCP task through its approval: the approver approves at the runner once the task
 * says `input_required`. What the stream said (statuses, the task id) and its result.
 */
export async function approvedChargeTask(stack: TestStack, client: Client, customer: string) {
  const statuses: string[] = [];
  let taskId: string | undefined;
  let result: unknown;
  let approving: Promise<void> | undefined;
  for await (const message of client.experimental.tasks.callToolStream({
    name: 'charge_card',
    arguments: { amount: 70_000, currency: 'USD', customer },
  })) {
    if (message.type === 'taskCreated' || message.type === 'taskStatus') {
      taskId = message.task.taskId;
      statuses.push(message.task.status);
      if (message.task.status === 'input_required') approving ??= decideApproval(stack, taskId, 'approve');
    } else if (message.type === 'result') result = message.result;
    else if (message.type === 'error') throw message.error;
  }
  await approving;
  return { statuses, taskId, result };
}
