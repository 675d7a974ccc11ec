import { describe, expect, it } from 'vitest';
import { formatTimeline, type TimelineEvent } from '../../cli/timeline';

const t0 = Date.parse('2026-01-01T10:00:00.000Z');
const at = (ms: number) => new Date(t0 + ms).toISOString();
const op = { runId: 'run_1', operationId: 'op_a', callId: 'call_1' };

/** A charge that got a 503, backed off honouring Retry-After, waited for approval and succeeded late into a cancelled run. */
const events: TimelineEvent[] = [
  { seq: 1, at: at(0), ...op, type: 'operation.proposed', to: 'proposed', detail: { toolName: 'charge_card', turn: 1, inputHash: 'sha256:abcdef0123456789' } },
  { seq: 2, at: at(5), ...op, type: 'policy.decision', detail: { decision: 'allow', approval: 'required', risk: 'irreversible_write', costCents: 60000 } },
  { seq: 3, at: at(6), ...op, type: 'state.transition', from: 'proposed', to: 'validated' },
  { seq: 4, at: at(7), ...op, type: 'approval.requested', detail: { approvalId: 'apr_1', expiresAt: '2026-01-02T10:00:00.000Z' } },
  { seq: 5, at: at(1500), ...op, type: 'approval.decided', detail: { approvalId: 'apr_1', decision: 'approve', approverId: 'alice' } },
  { seq: 6, at: at(1510), ...op, type: 'attempt.started', attempt: 1 },
  { seq: 7, at: at(1530), ...op, type: 'attempt.finished', attempt: 1, detail: { outcome: 'failed_retryable', code: 'upstream_unavailable', upstreamStatus: 503, latencyMs: 20 } },
  { seq: 8, at: at(1531), ...op, type: 'backoff.scheduled', attempt: 2, detail: { delaySeconds: 2, reason: 'transient', retryAfterSeconds: 2 } },
  { seq: 9, at: at(1532), runId: 'run_1', type: 'run.cancelled', detail: { previousStatus: 'open' } },
  { seq: 10, at: at(3600), ...op, type: 'reconcile.started', attempt: 1, detail: { plan: 'lookup' } },
  { seq: 11, at: at(3650), ...op, type: 'reconcile.finished', attempt: 1, detail: { plan: 'lookup', result: 'found' } },
  { seq: 12, at: at(3700), ...op, type: 'result.late', attempt: 2, detail: { outcome: 'succeeded', resultHash: 'x' } },
  { seq: 13, at: at(100), runId: 'run_1', operationId: 'op_b', callId: 'call_2', type: 'operation.proposed', detail: { toolName: 'get_order', turn: 2 } },
];

describe('formatTimeline', () => {
  const text = formatTimeline(events);
  const lines = text.trimEnd().split('\n');

  it('heads the timeline with the run, its size and its span', () => {
    expect(lines[0]).toBe('run run_1: 13 events, 2 operations, 3.700s');
  });

  it('groups events by operation in order of appearance, run-level events first, one line per event', () => {
    const headers = lines.filter((l) => l && !l.startsWith('  '));
    expect(headers).toEqual(['run run_1: 13 events, 2 operations, 3.700s', 'run', 'op_a charge_card  call call_1 turn 1', 'op_b get_order  call call_2 turn 2']);
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
    expect(text).toMatch(/policy allow approval required irreversible_write cost 60000¢/);
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
