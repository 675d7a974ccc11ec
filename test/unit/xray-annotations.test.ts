import type { Tracer } from '@aws-lambda-powertools/tracer';
import { describe, expect, it } from 'vitest';
import { storedResultOf } from '../../functions/core/result-record';
import { xrayTelemetry } from '../../functions/handlers/xray-telemetry';

/** A Powertools tracer stand-in that keeps the subsegments an attempt opens and what they were annotated with. */
function fakeTracer() {
  const subsegments: { name: string; annotations: Record<string, unknown>; closed: boolean }[] = [];
  const segment = {
    addNewSubsegment(name: string) {
      const sub = { name, annotations: {} as Record<string, unknown>, closed: false };
      subsegments.push(sub);
      return {
        addAnnotation: (key: string, value: unknown) => {
          sub.annotations[key] = value;
        },
        addErrorFlag: () => undefined,
        close: () => {
          sub.closed = true;
        },
      };
    },
  };
  const tracer = { isTracingEnabled: () => true, getSegment: () => segment, setSegment: () => undefined } as unknown as Tracer;
  return { tracer, subsegments };
}

describe('the attempt subsegment on X-Ray', () => {
  it('is annotated with the decisions too: the policy ids joined, searchable names, never the key', async () => {
    const { tracer, subsegments } = fakeTracer();
    await xrayTelemetry(tracer).attemptSpan(
      {
        toolName: 'charge_card',
        callId: 'call_1',
        operationId: 'op_1',
        runId: 'run_1',
        attempt: 1,
        risk: 'irreversible_write',
        idempotencyKeySent: true,
        replaySafe: true,
        approval: 'approved',
        policyDecision: 'require_approval',
        policyIds: ['charges', 'reads'],
        approvalRequired: true,
        approvalDecidedBy: 'alice',
        budgetRemainingCents: 1_500,
        idempotencyKeySha256: 'ab'.repeat(32),
      },
      async () => 'done',
      () => ({ outcome: { kind: 'succeeded', result: storedResultOf(null) }, upstreamStatus: 200, latencyMs: 7 }),
    );
    expect(subsegments).toHaveLength(1);
    expect(subsegments[0]).toMatchObject({
      name: 'execute_tool charge_card',
      closed: true,
      annotations: {
        gen_ai_operation_name: 'execute_tool',
        gen_ai_tool_name: 'charge_card',
        toolrunner_policy_decision: 'require_approval',
        toolrunner_policy_ids: 'charges,reads',
        toolrunner_approval_required: true,
        toolrunner_approval_decided_by: 'alice',
        toolrunner_budget_remaining_cents: 1_500,
        toolrunner_idempotency_key_sha256: 'ab'.repeat(32),
        toolrunner_outcome: 'succeeded',
      },
    });
  });
});
