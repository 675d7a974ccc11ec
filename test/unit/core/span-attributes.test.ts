import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
} from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../../../functions/core/canonical';
import type { OperationRecord, RunRecord } from '../../../functions/core/model';
import {
  attemptDecisions,
  budgetRemainingCents,
  endAttributes,
  GEN_AI_NAMES,
  startAttributes,
  TOOLRUNNER_ATTRS,
} from '../../../functions/core/span-attributes';

const run = (maxSpendCents: number, usage: Partial<RunRecord['usage']>): Pick<RunRecord, 'budgets' | 'usage'> => ({
  budgets: { maxTurns: 50, maxToolCalls: 200, maxWallClockSeconds: 3600, maxSpendCents },
  usage: { turns: 1, toolCalls: 1, spendCents: 0, ...usage },
});
const op = (fields: Partial<OperationRecord>) => ({ idempotencyKey: 'op_key_1', ...fields });

describe('span attribute names', () => {
  it('the GenAI names copied into the code are the package’s incubating ones', () => {
    expect(GEN_AI_NAMES).toEqual({
      ATTR_GEN_AI_OPERATION_NAME,
      ATTR_GEN_AI_TOOL_NAME,
      ATTR_GEN_AI_TOOL_CALL_ID,
      ATTR_GEN_AI_TOOL_TYPE,
      GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    });
  });

  it('a stable name comes from the package’s stable entry', () => {
    const end = endAttributes({ outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: 'x' }, latencyMs: 4 });
    expect(end[ATTR_ERROR_TYPE]).toBe('upstream_unavailable');
  });

  it('the runner’s own names sit under toolrunner., each once', () => {
    const names = Object.values(TOOLRUNNER_ATTRS);
    expect(names.every((n) => n.startsWith('toolrunner.'))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('the decisions behind an attempt', () => {
  it('a call the configured policies let run unattended: allow, both questions’ ids once each, sorted', () => {
    expect(
      attemptDecisions(
        op({ approvalRequired: false, policies: { call: ['reads', 'charges'], unattended: ['charges', 'small'] } }),
        run(10_000, { spendCents: 2_500 }),
      ),
    ).toEqual({
      approval: 'not_required',
      policyDecision: 'allow',
      policyIds: ['charges', 'reads', 'small'],
      approvalRequired: false,
      budgetRemainingCents: 7_500,
      idempotencyKeySha256: sha256('op_key_1').slice('sha256:'.length),
    });
  });

  it('an approved call names who approved it; without configured policies no ids, without a known run no budget', () => {
    const approved = attemptDecisions(
      op({ approvalRequired: true, approval: { approvalId: 'apr_1', state: 'approved', expiresAt: '', decidedBy: 'alice' } }),
      undefined,
    );
    expect(approved).toEqual({
      approval: 'approved',
      policyDecision: 'require_approval',
      approvalRequired: true,
      approvalDecidedBy: 'alice',
      idempotencyKeySha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const attributes = startAttributes({
      toolName: 't',
      callId: 'c',
      operationId: 'o',
      runId: 'r',
      attempt: 1,
      risk: 'read',
      idempotencyKeySent: false,
      replaySafe: true,
      ...approved,
    });
    expect(Object.keys(attributes)).not.toContain(TOOLRUNNER_ATTRS.policyIds);
    expect(Object.keys(attributes)).not.toContain(TOOLRUNNER_ATTRS.budgetRemainingCents);
    expect(JSON.stringify(attributes)).not.toContain('op_key_1');
  });

  it('the budget left counts model spend and open reservations, in cents to 4 places, never below zero', () => {
    // 1,000 cents of tools, 2.5 cents of model calls held (micro-cents), of a 5,000 cap.
    expect(budgetRemainingCents(run(5_000, { spendCents: 1_000, heldMicros: 1_002_500_000 }))).toBe(3_997.5);
    expect(budgetRemainingCents(run(5_000, { spendCents: 6_000 }))).toBe(0);
  });
});
