import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';

/** POST /v1/operations/{id}/resume (admin): the sweeper's resume for one operation, now. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => stack?.stop());

describe('resuming one operation', () => {
  it('answers 202 for an active operation, which then goes on as before; 409 once it is terminal', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const pending = await api.call(keys.agent, runId, {
      callId: 'call_resume_1',
      name: 'charge_card',
      arguments: { amount: 70_000, currency: 'USD', customer: 'cus_resume' },
    });
    expect(pending.status).toBe(202);
    const { operationId } = pending.body as { operationId: string };
    const resumed = await api.request('POST', `/v1/operations/${operationId}/resume`, { key: keys.admin });
    expect(resumed.status).toBe(202);
    expect(resumed.body).toMatchObject({ operationId, state: 'awaiting_approval', resumes: 1 });
    // The resumed wait keeps its request: the approver's decision still runs the call, once.
    const decided = await api.request('POST', `/v1/operations/${operationId}/approval`, {
      key: keys.approver,
      body: { decision: 'approve' },
    });
    expect(decided.status).toBe(200);
    const done = await api.until(
      'the charge to be reported',
      () => api.request('GET', `/v1/operations/${operationId}`, { key: keys.agent }),
      (r) => r.body.state === 'reported',
    );
    expect(done.body.envelope).toMatchObject({ status: 'succeeded' });
    const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_resume');
    expect(charges).toHaveLength(1);
    const again = await api.request('POST', `/v1/operations/${operationId}/resume`, { key: keys.admin });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
  });

  it('is for admins only, and says when there is no such operation', async () => {
    const { api, keys } = stack;
    expect((await api.request('POST', '/v1/operations/op_nosuchoperation123456789/resume', { key: keys.admin })).status).toBe(404);
    expect((await api.request('POST', '/v1/operations/op_nosuchoperation123456789/resume', { key: keys.agent })).status).toBe(403);
    expect((await api.request('POST', '/v1/operations/op_nosuchoperation123456789/resume', { key: keys.reviewer })).status).toBe(403);
  });
});
