import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval } from '../support/people';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

// Template mode only: policies decided inside the deployed bundles (the Cedar engine's WebAssembly beside each
// bundle, as CDK deploys it), with the configuration read from the config secret as on AWS.
describe.runIf(handlerMode === 'template')('policies in the deployed bundles', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
    stack.editConfig((config) => {
      config.policies = `
@id("calls") permit(principal, action in Action::"call", resource);
@id("unattended-up-to-200") permit(principal, action == Action::"charge_card:unattended", resource) when { context.input.amount <= 20000 };
@id("never-over-2000") forbid(principal, action == Action::"charge_card", resource) when { context.input.amount > 200000 };`;
    });
  }, 240_000);
  afterAll(async () => stack?.stop());

  it('decides at submission (Api) and again before the approved attempt (Execute)', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const charge = (amount: number) => ({ amount, currency: 'USD', customer: 'cus_tpl' });
    // Each function re-reads the secret within a minute of an edit: wait (with a deadline) until the policies decide.
    await api.until(
      'the policies to decide in the Api function',
      async () =>
        (
          await api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, {
            key: keys.agent,
            body: { name: 'charge_card', arguments: charge(1) },
          })
        ).body,
      (body) => body.policies !== undefined,
      90_000,
    );
    const big = await api.call(keys.agent, runId, { callId: 'call_big', name: 'charge_card', arguments: charge(250_000) });
    expect(big.body.message).toBe('this principal may not call charge_card: forbidden by "never-over-2000"');

    const small = await api.call(keys.agent, runId, { callId: 'call_small', name: 'charge_card', arguments: charge(1_500) });
    expect(small.body).toMatchObject({ status: 'succeeded' });

    const middle = await api.call(keys.agent, runId, { callId: 'call_middle', name: 'charge_card', arguments: charge(30_000) }, 0);
    const waiting = await api.until(
      'the middle charge to wait for a person',
      () => api.operation(keys.agent, middle.body.operationId),
      (op) => op.state === 'awaiting_approval',
    );
    expect(waiting.policies).toEqual({ call: ['calls'], unattended: [] });
    await decideApproval(stack, middle.body.operationId, 'approve');
    const done = await api.until(
      'the approved charge to run',
      () => api.operation(keys.agent, middle.body.operationId),
      (op) => op.state === 'reported',
      60_000,
    );
    expect(done.outcome).toMatchObject({ kind: 'succeeded' });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge').map((e) => e.body.amount);
    expect(charges).toEqual([1_500, 30_000]);
  });
});
