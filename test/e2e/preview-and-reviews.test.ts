import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { unknownOutcomeEmail } from '../support/scenarios';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: 7 });
});
afterAll(async () => stack?.stop());
beforeEach(async () => stack.sandbox.reset());

const preview = (key: string, runId: string, body: unknown) =>
  stack.api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, { key, body });

describe('policy preview', () => {
  it('decides like submission, without an operation, an attempt or budget spent', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 60_000 });
    const big = { amount: 50_000, currency: 'USD', customer: 'cus_1' };

    expect((await preview(keys.agent, runId, { name: 'get_order', arguments: { orderId: 'ord_1' } })).body).toMatchObject({
      decision: 'allow',
    });
    expect((await preview(keys.agent, runId, { name: 'charge_card', arguments: big })).body).toMatchObject({
      decision: 'require_approval',
    });
    expect((await preview(keys.agent, runId, { name: 'charge_card', arguments: { ...big, amount: 70_000 } })).body).toMatchObject({
      decision: 'deny',
      code: 'budget_exhausted',
    });
    expect((await preview(keys.agent, runId, { name: 'charge_card', arguments: { amount: 'ten' } })).body).toMatchObject({
      decision: 'deny',
      code: 'invalid_arguments',
    });
    expect((await preview(keys.agent, runId, { name: 'nope', arguments: {} })).body).toMatchObject({
      decision: 'deny',
      code: 'unknown_tool',
    });
    const otherRun = await api.createRun(keys.other);
    expect((await preview(keys.other, otherRun, { name: 'charge_card', arguments: big })).body).toMatchObject({
      decision: 'deny',
      code: 'forbidden',
    });

    // Nothing was created or spent by six previews.
    expect((await api.request('GET', `/v1/runs/${runId}`, { key: keys.agent })).body.usage).toMatchObject({
      toolCalls: 0,
      turns: 0,
      spendCents: 0,
    });
    expect(await api.trace(keys.agent, runId)).toEqual([]);
    expect(await stack.sandbox.ledger()).toEqual([]);

    // inputHash is the hash submission records, whether the arguments come as an object or a string.
    const asString = await preview(keys.agent, runId, {
      name: 'charge_card',
      arguments: JSON.stringify({ customer: 'cus_1', currency: 'USD', amount: 50_000 }),
    });
    const submitted = await api.call(keys.agent, runId, { callId: 'call_big', name: 'charge_card', arguments: big }, 0);
    const op = await api.operation(keys.agent, submitted.body.operationId);
    expect(asString.body.inputHash).toBe(op.inputHash);
  });

  it('refuses what the API refuses: another principal, a cancelled run, a bad body, no agent role', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    expect((await preview(keys.other, runId, { name: 'get_order', arguments: {} })).status).toBe(403);
    expect((await preview(keys.reviewer, runId, { name: 'get_order', arguments: {} })).status).toBe(403);
    expect((await preview(keys.agent, runId, { arguments: {} })).body).toMatchObject({ error: { code: 'invalid_request' } });
    expect((await preview(keys.agent, 'run_missing', { name: 'get_order', arguments: {} })).status).toBe(404);
    expect((await api.request('POST', `/v1/runs/${runId}/tool-calls/preview`, { body: { name: 'get_order', arguments: {} } })).status).toBe(
      401,
    );
    await api.request('POST', `/v1/runs/${runId}/cancel`, { key: keys.agent });
    expect((await preview(keys.agent, runId, { name: 'get_order', arguments: { orderId: 'ord_1' } })).body).toMatchObject({
      error: { code: 'run_closed' },
    });
  });
});

describe('tool shapes over HTTP', () => {
  it('serves the Responses API shape and strict Chat Completions parameters', async () => {
    const { api, keys } = stack;
    const responses = await api.request('GET', '/v1/tools?format=openai-responses', { key: keys.agent });
    expect(responses.body.tools.find((t: any) => t.name === 'charge_card')).toMatchObject({
      type: 'function',
      strict: true,
      parameters: { required: ['amount', 'currency', 'customer', 'description', 'metadata'] },
    });
    const chat = await api.request('GET', '/v1/tools?format=openai', { key: keys.agent });
    expect(chat.body.tools.find((t: any) => t.function.name === 'charge_card').function.parameters.properties.description.type).toEqual([
      'string',
      'null',
    ]);
  });
});

describe('review queue', () => {
  it('lists an unknown-outcome email until a reviewer resolves it', async () => {
    const { api, keys } = stack;
    const { runId, res } = await unknownOutcomeEmail(stack);
    expect(res.body).toMatchObject({ status: 'outcome_unknown', allowed_next_actions: expect.arrayContaining(['request_human_review']) });
    const opId = res.body.logical_operation_id;

    const listed = await api.until(
      'the review to be listed',
      async () => (await api.request('GET', '/v1/reviews?status=open', { key: keys.reviewer })).body.reviews as any[],
      (reviews) => reviews.some((r) => r.operationId === opId),
    );
    expect(listed.find((r) => r.operationId === opId)).toEqual({
      operationId: opId,
      runId,
      toolName: 'send_email',
      reason: expect.any(String),
      since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      resolveUrl: `/v1/operations/${opId}/resolve`,
    });
    expect((await api.request('GET', '/v1/reviews?status=open', { key: keys.agent })).status).toBe(403);
    expect((await api.request('GET', '/v1/reviews?status=closed', { key: keys.reviewer })).status).toBe(400);

    const resolved = await api.request('POST', listed.find((r) => r.operationId === opId).resolveUrl, {
      key: keys.reviewer,
      body: { outcome: 'succeeded', note: 'seen in the mail log' },
    });
    expect(resolved.status).toBe(200);
    const after = (await api.request('GET', '/v1/reviews', { key: keys.reviewer })).body.reviews as any[];
    expect(after.map((r) => r.operationId)).not.toContain(opId);
  });
});
