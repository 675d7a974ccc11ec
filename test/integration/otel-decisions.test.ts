import { createHash } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flushSpans, startOtlpExport, type OtlpExport } from '../../functions/adapters/otlp-export';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { usePolicies } from '../support/policies';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

/**
 * The decisions behind each attempt, on its `execute_tool` span as an OTLP collector receives it: the embedded
 * stack exports through the standard variables to a receiver on loopback, as `npm start` does.
 */
const SPEND_TIERS = `
@id("reads-and-charges")
permit(principal, action in Action::"call", resource);

@id("charges-unattended-up-to-200")
permit(principal, action == Action::"charge_card:unattended", resource)
when { context.input.amount <= 20000 };
`;
const CUSTOMER = 'cus_never_in_a_span';
const DESCRIPTION = 'arguments stay out of traces';
const charge = (amount: number) => ({ amount, currency: 'USD', customer: CUSTOMER, description: DESCRIPTION });
const hex = (text: string) => createHash('sha256').update(text).digest('hex');

let receiver: OtlpReceiver;
let exporting: OtlpExport | undefined;
let stack: TestStack;

// The steps must run in this process, where the exporter is registered (the bundled handlers have their own).
describe.skipIf(handlerMode !== 'source')('tool spans at an OTLP receiver', () => {
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The exporter reads the standard variables from the process itself; they are removed again below.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    trace.disable();
    exporting = startOtlpExport(process.env);
    stack = await startTestStack({ seed: 52 });
  });
  afterAll(async () => {
    await stack?.stop();
    await exporting?.shutdown();
    trace.disable();
    await receiver?.close();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
  });

  /** The spans of one operation, once `count` of them reached the receiver (each flush sends what has ended). */
  async function spansOf(operationId: string, count: number): Promise<ReceivedSpan[]> {
    return stack.api.until(
      `${count} span(s) of ${operationId} at the receiver`,
      async () => {
        await flushSpans();
        return receiver.spans().filter((s) => s.attributes['toolrunner.operation_id'] === operationId);
      },
      (spans) => spans.length >= count,
    );
  }

  it('carries the policy decision and its ids, the approval and who gave it, the budget left and the key hash; never the key or arguments', async () => {
    await usePolicies(stack, SPEND_TIERS);
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent, { maxSpendCents: 60_000 });

    // Under the unattended limit: runs at once, in the submitting process.
    const small = await api.call(keys.agent, runId, { callId: 'call_small', name: 'charge_card', arguments: charge(15_000) });
    expect(small.body).toMatchObject({ status: 'succeeded' });

    // Over it: waits for a person, then runs in the Execute step.
    const middle = await api.call(keys.agent, runId, { callId: 'call_middle', name: 'charge_card', arguments: charge(30_000) }, 0);
    await api.until(
      'the charge to wait for a person',
      () => api.operation(keys.agent, middle.body.operationId),
      (op) => op.state === 'awaiting_approval',
    );
    const pending = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = pending.body.approvals.find((a: { operationId: string }) => a.operationId === middle.body.operationId);
    const sig = new URL(approval.url).searchParams.get('sig');
    expect((await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } })).status).toBe(200);
    // An admin's view holds the idempotency key (an agent's never does).
    const approved = await api.until(
      'the approved charge to be reported',
      () => api.operation(keys.admin, middle.body.operationId),
      (op) => op.state === 'reported',
    );
    expect(approved.approval).toMatchObject({ state: 'approved', decidedBy: 'approver' });
    const unattended = await api.operation(keys.admin, small.body.logical_operation_id);
    expect([typeof unattended.idempotencyKey, typeof approved.idempotencyKey]).toEqual(['string', 'string']);

    const [smallSpan] = await spansOf(unattended.operationId, 1);
    expect(smallSpan.name).toBe('execute_tool charge_card');
    expect(smallSpan.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'charge_card',
      'gen_ai.tool.call.id': 'call_small',
      'toolrunner.policy.decision': 'allow',
      'toolrunner.policy.ids': ['charges-unattended-up-to-200', 'reads-and-charges'],
      'toolrunner.approval.required': false,
      'toolrunner.budget.remaining_cents': 45_000,
      'toolrunner.idempotency_key.sha256': hex(unattended.idempotencyKey),
      'toolrunner.outcome': 'succeeded',
    });
    expect(smallSpan.attributes).not.toHaveProperty('toolrunner.approval.decided_by');

    const [approvedSpan] = await spansOf(approved.operationId, 1);
    expect(approvedSpan.attributes).toMatchObject({
      'gen_ai.tool.call.id': 'call_middle',
      'toolrunner.policy.decision': 'require_approval',
      'toolrunner.policy.ids': ['reads-and-charges'],
      'toolrunner.approval.required': true,
      'toolrunner.approval.decided_by': 'approver',
      'toolrunner.approval': 'approved',
      // 60,000 less the two charges the run admitted.
      'toolrunner.budget.remaining_cents': 15_000,
      'toolrunner.idempotency_key.sha256': hex(approved.idempotencyKey),
      'toolrunner.outcome': 'succeeded',
    });

    // Nothing the call carried travels to the collector: not the keys, not the arguments (anywhere in what was sent).
    const sent = receiver.bodies().join('\n');
    for (const secret of [unattended.idempotencyKey, approved.idempotencyKey, CUSTOMER, DESCRIPTION]) expect(sent).not.toContain(secret);
  });
});
