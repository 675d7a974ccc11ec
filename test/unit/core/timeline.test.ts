import { describe, expect, it } from 'vitest';
import { MASK, redact } from '../../../functions/core/redact';
import { formatTimeline, timelineModel, type TimelineEvent } from '../../../functions/core/timeline';

const t0 = Date.parse('2026-01-01T10:00:00.000Z');
const at = (ms: number) => new Date(t0 + ms).toISOString();
const op = { runId: 'run_1', operationId: 'op_a', callId: 'call_1' };

/** A charge that got a 503, backed off honouring Retry-After, waited for approval and succeeded late into a cancelled run. */
const events: TimelineEvent[] = [
  {
    seq: 1,
    at: at(0),
    ...op,
    type: 'operation.proposed',
    to: 'proposed',
    detail: { toolName: 'charge_card', turn: 1, inputHash: 'abcdef0123456789' },
  },
  {
    seq: 2,
    at: at(5),
    ...op,
    type: 'policy.decision',
    detail: { decision: 'allow', approval: 'required', risk: 'irreversible_write', costCents: 60000 },
  },
  { seq: 3, at: at(6), ...op, type: 'state.transition', from: 'proposed', to: 'validated' },
  { seq: 4, at: at(7), ...op, type: 'approval.requested', detail: { approvalId: 'apr_1', expiresAt: '2026-01-02T10:00:00.000Z' } },
  { seq: 5, at: at(1500), ...op, type: 'approval.decided', detail: { approvalId: 'apr_1', decision: 'approve', approverId: 'alice' } },
  { seq: 6, at: at(1510), ...op, type: 'attempt.started', attempt: 1 },
  {
    seq: 7,
    at: at(1530),
    ...op,
    type: 'attempt.finished',
    attempt: 1,
    detail: { outcome: 'failed_retryable', code: 'upstream_unavailable', upstreamStatus: 503, latencyMs: 20 },
  },
  {
    seq: 8,
    at: at(1531),
    ...op,
    type: 'backoff.scheduled',
    attempt: 2,
    detail: { delaySeconds: 2, reason: 'transient', retryAfterSeconds: 2 },
  },
  { seq: 9, at: at(1532), runId: 'run_1', type: 'run.cancelled', detail: { previousStatus: 'open' } },
  { seq: 10, at: at(3600), ...op, type: 'reconcile.started', attempt: 1, detail: { plan: 'lookup' } },
  { seq: 11, at: at(3650), ...op, type: 'reconcile.finished', attempt: 1, detail: { plan: 'lookup', result: 'found' } },
  { seq: 12, at: at(3700), ...op, type: 'result.late', attempt: 2, detail: { outcome: 'succeeded', resultHash: 'x' } },
  {
    seq: 13,
    at: at(100),
    runId: 'run_1',
    operationId: 'op_b',
    callId: 'call_2',
    type: 'operation.proposed',
    detail: { toolName: 'get_order', turn: 2 },
  },
];

/** The terminal's contract (the `toolrunner trace` formatter's tests), kept so the CLI can render this model unchanged. */
describe('formatTimeline (terminal text from the model)', () => {
  const text = formatTimeline(events);
  const lines = text.trimEnd().split('\n');

  it('heads the timeline with the run, its size and its span', () => {
    expect(lines[0]).toBe('run run_1: 13 events, 2 operations, 3.700s');
  });

  it('groups events by operation in order of appearance, run-level events first, one line per event', () => {
    const headers = lines.filter((l) => l && !l.startsWith('  '));
    expect(headers).toEqual([
      'run run_1: 13 events, 2 operations, 3.700s',
      'run',
      'op_a charge_card  call call_1 turn 1',
      'op_b get_order  call call_2 turn 2',
    ]);
    expect(lines.filter((l) => l.startsWith('  '))).toHaveLength(events.length);
    const opA = lines.slice(lines.indexOf('op_a charge_card  call call_1 turn 1') + 1);
    expect(opA[0]).toMatch(/^\s+\+0\.000s\s+proposed charge_card args abcdef012345…$/);
  });

  it('shows times relative to the first event even when events arrive out of order', () => {
    expect(text).toMatch(/\+0\.100s\s+proposed get_order/);
    expect(text).toMatch(/\+3\.700s\s+#2\s+LATE result recorded after the call closed succeeded \(not reported\)/);
  });

  it('names attempts, backoffs with their reasons, approvals with who decided, reconciliations and transitions', () => {
    expect(text).toMatch(/\+1\.530s\s+#1\s+attempt finished failed_retryable upstream_unavailable HTTP 503 20 ms/);
    expect(text).toMatch(/\+1\.531s\s+#2\s+backoff 2 s \(transient, Retry-After 2 s\)/);
    expect(text).toMatch(/\+1\.500s\s+approval approve by alice apr_1/);
    expect(text).toMatch(/reconcile started \(lookup\)/);
    expect(text).toMatch(/reconcile finished found/);
    expect(text).toMatch(/proposed → validated/);
    expect(text).toMatch(/policy allow approval required irreversible_write cost \$600\.00/);
    expect(text).toMatch(/\+1\.532s\s+run cancelled \(was open\)/);
  });

  it('says who decided an expired approval and keeps unknown event types readable', () => {
    const out = formatTimeline([
      { seq: 1, at: at(0), ...op, type: 'approval.decided', detail: { decision: 'expired', approvalId: 'apr_9' } },
      { seq: 2, at: at(1), ...op, type: 'something.new', detail: { a: 1 } },
    ]);
    expect(out).toContain('approval expired by nobody (expired) apr_9');
    expect(out).toContain('something.new {"a":1}');
  });

  it('says so when there are no events', () => {
    expect(formatTimeline([])).toBe('no events\n');
  });
});

describe('timelineModel', () => {
  it('gives each line its offset, attempt, kind and whether it needs a person’s eye', () => {
    const model = timelineModel(events);
    expect(model).toMatchObject({ runId: 'run_1', eventCount: 13, operationCount: 2, spanMs: 3700 });
    expect(model.groups.map((g) => [g.operationId, g.toolName, g.callId, g.turn, g.lines.length])).toEqual([
      [undefined, undefined, undefined, undefined, 1],
      ['op_a', 'charge_card', 'call_1', 1, 11],
      ['op_b', 'get_order', 'call_2', 2, 1],
    ]);
    const a = model.groups[1].lines;
    expect(a.find((l) => l.seq === 7)).toMatchObject({ offset: '+1.530s', offsetMs: 1530, attempt: 1, kind: 'attempt', notable: true });
    expect(a.find((l) => l.seq === 6)).toMatchObject({ kind: 'attempt', notable: false, text: 'attempt started' });
    expect(a.find((l) => l.seq === 12)).toMatchObject({ kind: 'late', notable: true });
  });

  it('tells replays, conflicts with both hashes, the approver’s reason and the reviewer’s note', () => {
    const model = timelineModel([
      {
        seq: 1,
        at: at(0),
        ...op,
        type: 'operation.proposed',
        detail: { toolName: 'charge_card', turn: 1, inputHash: 'sha256:1111111111111111' },
      },
      {
        seq: 2,
        at: at(10),
        ...op,
        type: 'approval.decided',
        detail: { approvalId: 'apr_1', decision: 'reject', approverId: 'bob', reason: 'not this\nmonth' },
      },
      {
        seq: 3,
        at: at(20),
        ...op,
        type: 'operation.replayed',
        detail: { inputHash: 'sha256:1111111111111111', state: 'reported', requestedBy: 'agent' },
      },
      {
        seq: 4,
        at: at(30),
        ...op,
        type: 'call.conflict',
        detail: {
          toolName: 'charge_card',
          storedToolName: 'charge_card',
          storedInputHash: 'sha256:1111111111111111',
          submittedInputHash: 'sha256:2222222222222222',
        },
      },
      {
        seq: 5,
        at: at(40),
        ...op,
        type: 'reconcile.finished',
        detail: { result: 'resolved_by_reviewer', verdict: 'succeeded', reviewerId: 'rita', note: 'seen in the ledger' },
      },
    ]);
    const texts = model.groups[0].lines.map((l) => [l.kind, l.notable, l.text]);
    expect(texts).toEqual([
      ['proposal', false, 'proposed charge_card args sha256:11111…'],
      ['approval', true, 'approval reject by bob apr_1 — reason: "not this month"'],
      ['replay', false, 'duplicate submission replayed from agent (operation reported; nothing ran again)'],
      [
        'conflict',
        true,
        'CONFLICT: callId reused with different arguments → 409 call_id_conflict (stored args sha256:11111…, sent sha256:22222…)',
      ],
      ['reconcile', true, 'reconcile finished resolved_by_reviewer verdict succeeded by rita — note: "seen in the ledger"'],
    ]);
  });

  it('attaches what the viewer may see of an operation, and nothing to operations it was not given', () => {
    const model = timelineModel(events, { op_a: { arguments: { amount: 5 }, result: { id: 'ch_1' } } });
    expect(model.groups[1].details).toEqual({ arguments: { amount: 5 }, result: { id: 'ch_1' } });
    expect(model.groups[2].details).toBeUndefined();
  });
});

describe('redact', () => {
  it('masks secret-looking keys at any depth and card-like numbers to their last four', () => {
    const out = redact({
      amount: 1200,
      customer: 'cus_1',
      password: 'hunter2',
      apiKey: 'k',
      idempotencyKey: 'idk_abc',
      nested: { Authorization: 'Bearer x', access_token: 't', client_secret: 's', list: [{ card: '4242 4242 4242 4242' }] },
      note: 'paid with 4000-0566-5566-5556 yesterday',
      cardNumber: 4242424242424242,
      phone: 5551234,
    });
    expect(out).toEqual({
      amount: 1200,
      customer: 'cus_1',
      password: MASK,
      apiKey: MASK,
      idempotencyKey: MASK,
      nested: { Authorization: MASK, access_token: MASK, client_secret: MASK, list: [{ card: `${MASK}4242` }] },
      note: `paid with ${MASK}5556 yesterday`,
      cardNumber: MASK,
      phone: 5551234,
    });
    expect(redact({ big: 4242424242424242 })).toEqual({ big: `${MASK}4242` });
  });
});
