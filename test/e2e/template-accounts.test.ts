import { afterAll, describe, expect, it } from 'vitest';
import { operationIdFor } from '../../functions/client';
import type { CfnTemplate } from '../../local/template/assembly';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

type Resource = { Type: string; Properties: Record<string, any> };

/** `ToolRunnerConcurrency.RESERVED` written into the template, as a deploy with the preset would have it. */
function withPreset(template: CfnTemplate): void {
  const preset: Record<string, number> = { Execute: 100, Reconcile: 50, Sweeper: 2, Api: 500 };
  for (const [id, r] of Object.entries(template.Resources as Record<string, Resource>)) {
    const name = /^Runner(\w+?)Function[0-9A-F]{8}$/.exec(id)?.[1];
    if (r.Type === 'AWS::Lambda::Function' && name && preset[name]) r.Properties.ReservedConcurrentExecutions = preset[name];
  }
}

/** Starts the stack from the template in an account described by the variables, restoring them after. */
async function startIn(account: Record<string, string>, editTemplate?: (t: CfnTemplate) => void): Promise<TestStack> {
  const saved = Object.fromEntries(Object.keys(account).map((k) => [k, process.env[k]]));
  Object.assign(process.env, account);
  try {
    return await startTestStack(editTemplate ? { editTemplate } : {});
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const address = { line1: '1 Main Street', city: 'Springfield', postalCode: '10001', country: 'US' };

/** A read the API runs itself, and a locked write that Execute runs (through the Express machine and Tools). */
async function serves(stack: TestStack): Promise<void> {
  const { api, keys } = stack;
  const runId = await api.createRun(keys.agent);
  const read = await api.call(keys.agent, runId, { callId: 'c_read', name: 'get_order', arguments: { orderId: 'ord_1' } }, 20);
  expect(read.status).toBe(200);
  expect(read.body.status).toBe('succeeded');
  const write = await api.call(
    keys.agent,
    runId,
    { callId: 'c_write', name: 'update_shipping_address', arguments: { orderId: 'ord_2', address } },
    20,
  );
  expect([200, 202]).toContain(write.status);
  const done = await api.until(
    'the write to be reported',
    async () => stack.deps!.store.getOperation(operationIdFor(runId, 'c_write')),
    (o) => o?.state === 'reported',
    90_000,
  );
  expect(done).toMatchObject({ outcome: { kind: 'succeeded' }, attempts: 1 });
  expect(stack.aws!.account.throttlesByFunction()).toEqual({});
}

// Template mode only: the account's quota and Lambda's rule on reservations exist only there.
describe.runIf(handlerMode === 'template')("the construct's defaults in any account (template mode's quota, applied unscaled)", () => {
  const stacks: TestStack[] = [];
  afterAll(async () => {
    await Promise.all(stacks.map((s) => s.stop()));
  });

  it("ToolRunnerConcurrency.RESERVED is refused in a new account (quota 10) with AWS's message, before anything starts", async () => {
    await expect(startIn({ TOOLRUNNER_ACCOUNT_CONCURRENCY: '10' }, withPreset)).rejects.toThrow(
      "Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [10]",
    );
    // A busy account (249 reserved elsewhere of 1,000), and a second runner with the preset (652 elsewhere).
    for (const elsewhere of ['249', '652'])
      await expect(
        startIn({ TOOLRUNNER_ACCOUNT_CONCURRENCY: '1000', TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE: elsewhere }, withPreset),
      ).rejects.toThrow(/below its minimum value of \[100\]/);
  });

  it('the defaults start and serve in a new account of quota 10', async () => {
    const stack = await startIn({ TOOLRUNNER_ACCOUNT_CONCURRENCY: '10' });
    stacks.push(stack);
    expect(stack.aws!.account.reservations.size).toBe(0);
    expect(stack.aws!.account.unreserved).toBe(10);
    await serves(stack);
  }, 300_000);

  it('the defaults start and serve at quota 1,000 with 900 reserved elsewhere, beside a second runner of the defaults', async () => {
    // Another runner of the defaults in the account reserves nothing: what the others reserve is all that
    // TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE models, here 900 plus that runner's 0.
    const stack = await startIn({ TOOLRUNNER_ACCOUNT_CONCURRENCY: '1000', TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE: '900' });
    stacks.push(stack);
    expect(stack.aws!.account.unreserved).toBe(100);
    await serves(stack);
  }, 300_000);
});
