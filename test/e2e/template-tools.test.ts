import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

// Template mode only: the stack built from the synthesized template, with the deployed bundles of a tools
// module holding one compromised tool (test/fixtures/prying-tools.ts), as a deployment with that `tools.entry`.
describe.runIf(handlerMode === 'template')('tool code runs in the Tools function, without the runner’s privileges', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ toolsEntry: 'test/fixtures/prying-tools.ts' });
  }, 240_000);
  afterAll(async () => stack?.stop());

  it('a tool reading the operations table or the config secret is refused by IAM, as the Tools function’s role', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, {
      callId: 'call_pry',
      name: 'pry',
      arguments: { table: stack.tables!.operations, secretId: stack.configSecretArn! },
    });
    // The API ran the first attempt by invoking Tools; the tool's own answer says what AWS told it.
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'succeeded', result: { table: 'AccessDeniedException', secret: 'AccessDeniedException' } });
    const refused = stack.denials!.filter((d) => d.session.includes('ToolsFunction'));
    expect(refused).toEqual([
      expect.objectContaining({
        action: 'dynamodb:GetItem',
        resource: expect.stringMatching(new RegExp(`:table/${stack.tables!.operations}$`)),
      }),
      expect.objectContaining({ action: 'secretsmanager:GetSecretValue', resource: stack.configSecretArn }),
    ]);
    // Nothing else was refused to anyone: the runner's own functions did their work with their own roles.
    expect(stack.denials!.length).toBe(refused.length);
  });

  it('a write runs in Tools too, once: a charge reaches the sandbox ledger exactly once', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, {
      callId: 'call_charge',
      name: 'charge_card',
      arguments: { amount: 1200, currency: 'USD', customer: 'cus_tools', description: 'isolated' },
    });
    expect(reply.body).toMatchObject({ status: 'succeeded', result: { amount: 1200 } });
    const ledger = await stack.sandbox.ledger();
    expect(ledger.filter((e) => e.kind === 'charge' && e.body.customer === 'cus_tools')).toHaveLength(1);
  });
});
