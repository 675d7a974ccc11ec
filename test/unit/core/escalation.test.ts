import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../../functions/core/config';
import {
  dueEscalationStep,
  escalationRecipients,
  firstApprovers,
  nextEscalationAt,
  type EscalationStep,
} from '../../../functions/core/escalation';
import { transition } from '../../../functions/core/engine';
import type { Role } from '../../../functions/core/model';
import { InvalidEventError } from '../../../functions/core/transition-table';
import { operation } from '../../support/records';

const key = (c: string) => c.repeat(24);
const principals = [
  { id: 'agent', key: key('a'), roles: ['agent'], tools: '*' },
  { id: 'alice', key: key('b'), roles: ['approver'], tools: [] },
  { id: 'bob', key: key('c'), roles: ['approver'], tools: [] },
  { id: 'carol', key: key('d'), roles: ['reviewer'], tools: [] },
  { id: 'root', key: key('e'), roles: ['admin'], tools: '*' },
];

const problems = (approvalEscalation: unknown, extra: Record<string, unknown> = {}) => {
  const parsed = RunnerConfigSchema.safeParse({ principals, approvalTtlSeconds: 3600, approvalEscalation, ...extra });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('approvalEscalation in the config document', () => {
  it('accepts steps that name approvers, strictly later, all before the TTL', () => {
    expect(
      problems([
        { afterMinutes: 15, principals: ['bob'] },
        { afterMinutes: 45, roles: ['admin'] },
      ]),
    ).toEqual([]);
  });

  it('refuses more than 10 steps', () => {
    const steps = Array.from({ length: 11 }, (_, i) => ({ afterMinutes: i + 1, roles: ['admin'] }));
    expect(problems(steps, { approvalTtlSeconds: 86400 })).toEqual(['approvalEscalation: approvalEscalation has at most 10 steps']);
  });

  it('refuses unknown fields (strict)', () => {
    expect(problems([{ afterMinutes: 5, roles: ['admin'], channel: 'x' }])).toEqual(['approvalEscalation.0: Unrecognized key: "channel"']);
  });

  it('refuses afterMinutes that is not a whole number', () => {
    expect(problems([{ afterMinutes: 1.5, roles: ['admin'] }])).toEqual([
      'approvalEscalation.0.afterMinutes: afterMinutes is a whole number of minutes',
    ]);
    expect(problems([{ afterMinutes: 0, roles: ['admin'] }])).toEqual(['approvalEscalation.0.afterMinutes: afterMinutes is at least 1']);
  });

  it('refuses steps that are not strictly increasing', () => {
    expect(
      problems([
        { afterMinutes: 20, roles: ['admin'] },
        { afterMinutes: 20, principals: ['bob'] },
      ]),
    ).toEqual(["approvalEscalation.1: approvalEscalation.1 (afterMinutes 20): afterMinutes must be greater than the step before's (20)"]);
  });

  it('refuses a step at or after the approval TTL', () => {
    expect(problems([{ afterMinutes: 60, roles: ['admin'] }])).toEqual([
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 60): afterMinutes must be below the approval TTL (approvalTtlSeconds 3600, 60 minutes)',
    ]);
  });

  it('refuses a step that names nobody', () => {
    expect(problems([{ afterMinutes: 5 }])).toEqual([
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 5): name the roles or principals to notify',
    ]);
  });

  it('refuses a principal that does not exist or may not approve', () => {
    expect(problems([{ afterMinutes: 5, principals: ['mallory', 'carol'] }])).toEqual([
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 5): no principal has the id "mallory"',
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 5): principal "carol" may not approve (it needs the approver or admin role)',
    ]);
  });

  it('refuses a role that may not approve, or that nobody holds', () => {
    expect(problems([{ afterMinutes: 5, roles: ['reviewer'] }])).toEqual([
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 5): the role "reviewer" may not approve (approver or admin)',
    ]);
    expect(problems([{ afterMinutes: 5, roles: ['admin'] }], { principals: principals.filter((p) => p.id !== 'root') })).toEqual([
      'approvalEscalation.0: approvalEscalation.0 (afterMinutes 5): no principal holds the role "admin"',
    ]);
  });

  it('refuses steps that keep every approver back, so nobody would be asked at first', () => {
    expect(problems([{ afterMinutes: 5, roles: ['approver'] }])).toEqual([
      'approvalEscalation.0: approvalEscalation: every principal who may approve is kept for a later step, so nobody would be asked when an approval is requested',
    ]);
  });
});

describe('which escalation step is due', () => {
  const steps = [{ afterMinutes: 10 }, { afterMinutes: 30 }, { afterMinutes: 60 }];
  const requestedAt = '2026-01-01T00:00:00.000Z';
  const at = (minutes: number) => Date.parse(requestedAt) + minutes * 60_000;

  it('is none before the first step, then each step in order once its time has come', () => {
    expect(dueEscalationStep({ steps, requestedAt, now: at(9.99), sent: 0 })).toBeUndefined();
    expect(dueEscalationStep({ steps, requestedAt, now: at(10), sent: 0 })).toBe(0);
    expect(dueEscalationStep({ steps, requestedAt, now: at(29), sent: 1 })).toBeUndefined();
    expect(dueEscalationStep({ steps, requestedAt, now: at(30), sent: 1 })).toBe(1);
    expect(dueEscalationStep({ steps, requestedAt, now: at(600), sent: 3 })).toBeUndefined();
  });

  it('sends overdue steps one after another, none skipped', () => {
    expect(dueEscalationStep({ steps, requestedAt, now: at(61), sent: 0 })).toBe(0);
    expect(dueEscalationStep({ steps, requestedAt, now: at(61), sent: 1 })).toBe(1);
    expect(dueEscalationStep({ steps, requestedAt, now: at(61), sent: 2 })).toBe(2);
  });

  it('is none once the approval has expired', () => {
    expect(dueEscalationStep({ steps, requestedAt, now: at(61), sent: 0, expiresAt: new Date(at(61)).toISOString() })).toBeUndefined();
  });

  it('says when the next step comes due', () => {
    expect(nextEscalationAt(steps, requestedAt, 1)).toBe('2026-01-01T00:30:00.000Z');
    expect(nextEscalationAt(steps, requestedAt, 3)).toBeUndefined();
  });
});

describe('who hears of a step', () => {
  const people: { id: string; roles: Role[] }[] = [
    { id: 'alice', roles: ['approver'] },
    { id: 'bob', roles: ['approver'] },
    { id: 'root', roles: ['admin'] },
    { id: 'owner', roles: ['admin'] },
  ];
  const steps: EscalationStep[] = [
    { afterMinutes: 10, principals: ['bob'] },
    { afterMinutes: 30, roles: ['admin'] },
  ];
  const op = { principalId: 'owner', requestedBy: 'owner' };
  const ids = (ps: { id: string }[]) => ps.map((p) => p.id);

  it('asks first everyone who may approve except those kept for a step', () => {
    expect(ids(firstApprovers(people, steps))).toEqual(['alice']);
    expect(ids(firstApprovers(people))).toEqual(['alice', 'bob', 'root', 'owner']);
  });

  it('escalates to the step group and reminds those asked before; never the requester or run owner', () => {
    const first = escalationRecipients(people, steps, 0, op);
    expect({ escalated: ids(first.escalated), reminded: ids(first.reminded) }).toEqual({ escalated: ['bob'], reminded: ['alice'] });
    const second = escalationRecipients(people, steps, 1, op);
    expect({ escalated: ids(second.escalated), reminded: ids(second.reminded) }).toEqual({
      escalated: ['root'],
      reminded: ['alice', 'bob'],
    });
    const requestedByRoot = escalationRecipients(people, steps, 1, { principalId: 'owner', requestedBy: 'root' });
    expect(ids(requestedByRoot.escalated)).toEqual([]);
  });
});

describe('the escalation event on the record', () => {
  const waiting = operation({
    schemaVersion: 1,
    toolName: 't',
    principalId: 'p',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    state: 'awaiting_approval',
    approval: { approvalId: 'ap_1', state: 'pending', expiresAt: '2026-01-02T00:00:00.000Z', requestedAt: '2026-01-01T00:00:00.000Z' },
    approvalTaskToken: 'token',
  });
  const now = Date.parse('2026-01-01T00:10:00.000Z');

  it('keeps each step sent and traces who was escalated to and reminded', () => {
    const out = transition(waiting, { type: 'escalate_approval', step: 0, afterMinutes: 10, escalated: ['bob'], reminded: ['alice'] }, now);
    expect(out.op.approval?.escalations).toEqual([{ step: 0, at: '2026-01-01T00:10:00.000Z', escalated: ['bob'], reminded: ['alice'] }]);
    expect(out.op.state).toBe('awaiting_approval');
    expect(out.op.leaseUntil).toBe(waiting.leaseUntil);
    expect(out.events).toEqual([
      {
        type: 'approval.escalated',
        operationId: waiting.operationId,
        callId: waiting.callId,
        detail: { approvalId: 'ap_1', step: 0, afterMinutes: 10, recipients: ['bob'] },
      },
      {
        type: 'approval.reminded',
        operationId: waiting.operationId,
        callId: waiting.callId,
        detail: { approvalId: 'ap_1', step: 0, afterMinutes: 10, recipients: ['alice'] },
      },
    ]);
    // The same step again changes nothing (a second sweeper that read the record before the first wrote it).
    const again = transition(
      out.op,
      { type: 'escalate_approval', step: 0, afterMinutes: 10, escalated: ['bob'], reminded: ['alice'] },
      now,
    );
    expect(again.events).toEqual([]);
    expect(again.op.approval?.escalations).toHaveLength(1);
  });

  it('is refused once the approval is decided', () => {
    const decided = transition(waiting, { type: 'decide_approval', decision: 'approve', by: 'alice' }, now).op;
    expect(() => transition(decided, { type: 'escalate_approval', step: 0, afterMinutes: 10, escalated: [], reminded: [] }, now)).toThrow(
      InvalidEventError,
    );
  });

  it('an escalated approval that expires still tells the model to retry with a new call id', () => {
    const escalated = transition(
      waiting,
      { type: 'escalate_approval', step: 0, afterMinutes: 10, escalated: ['bob'], reminded: [] },
      now,
    ).op;
    const expired = transition(escalated, { type: 'expire_approval' }, Date.parse('2026-01-02T00:00:00.000Z')).op;
    const reported = transition(expired, { type: 'report' }, Date.parse('2026-01-02T00:00:00.000Z')).op;
    expect(reported.envelope).toMatchObject({ status: 'rejected', code: 'approval_expired' });
    expect(reported.envelope?.allowed_next_actions).toContain('retry_with_new_call_id');
  });
});
