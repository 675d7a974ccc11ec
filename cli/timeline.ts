/** The fields of a trace event the timeline reads (the API's `GET /v1/runs/{runId}/trace`). */
export interface TimelineEvent {
  seq: number;
  at: string;
  runId: string;
  operationId?: string;
  callId?: string;
  type: string;
  from?: string;
  to?: string;
  attempt?: number;
  detail?: Record<string, unknown>;
}

/**
 * A run's trace as a timeline for a terminal: one line per event, grouped by operation (in order of first
 * appearance; run-level events first), times relative to the run's first event. Pure, so it is tested
 * without a runner.
 */
export function formatTimeline(events: readonly TimelineEvent[]): string {
  if (events.length === 0) return 'no events\n';
  const ordered = [...events].sort((a, b) => a.seq - b.seq);
  const times = ordered.map((e) => Date.parse(e.at));
  const start = Math.min(...times);
  const end = Math.max(...times);
  const groups = new Map<string, TimelineEvent[]>();
  for (const event of ordered) {
    const key = event.operationId ?? '';
    const group = groups.get(key) ?? [];
    group.push(event);
    groups.set(key, group);
  }
  const operations = [...groups.keys()].filter((k) => k !== '').length;
  const lines = [`run ${ordered[0].runId}: ${ordered.length} events, ${operations} operation${operations === 1 ? '' : 's'}, ${seconds(end - start)}`];
  const runLevel = groups.get('');
  if (runLevel) {
    lines.push('', 'run');
    for (const event of runLevel) lines.push(line(event, start));
  }
  for (const [operationId, group] of groups) {
    if (!operationId) continue;
    const proposed = group.find((e) => e.type === 'operation.proposed');
    const tool = typeof proposed?.detail?.toolName === 'string' ? ` ${proposed.detail.toolName}` : '';
    const turn = typeof proposed?.detail?.turn === 'number' ? ` turn ${proposed.detail.turn}` : '';
    lines.push('', `${operationId}${tool}  call ${group[0].callId ?? '?'}${turn}`);
    for (const event of group) lines.push(line(event, start));
  }
  return `${lines.join('\n')}\n`;
}

function line(event: TimelineEvent, start: number): string {
  const offset = `+${seconds(Date.parse(event.at) - start)}`.padStart(9);
  const attempt = event.attempt !== undefined ? `#${event.attempt}` : '';
  return `  ${offset}  ${attempt.padEnd(3)} ${describe(event)}`.trimEnd();
}

function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(3)}s`;
}

/** What happened, in words; unknown types still show their type and detail. */
export function describe(event: TimelineEvent): string {
  const d = event.detail ?? {};
  const text = (key: string) => (d[key] === undefined || d[key] === null ? undefined : String(d[key]));
  const parts = (...items: (string | undefined | false)[]) => items.filter(Boolean).join(' ');
  switch (event.type) {
    case 'operation.proposed':
      return parts('proposed', text('toolName'), text('inputHash') && `args ${short(text('inputHash')!)}`);
    case 'state.transition':
      return parts(`${event.from ?? '?'} → ${event.to ?? '?'}`, text('reason') && `(${text('reason')})`);
    case 'policy.decision':
      return parts('policy', text('decision'), text('code'), text('approval') && `approval ${text('approval')}`, text('risk'), text('costCents') && `cost ${text('costCents')}¢`);
    case 'approval.requested':
      return parts('approval requested', text('approvalId'), text('expiresAt') && `expires ${text('expiresAt')}`);
    case 'approval.decided': {
      const decision = text('decision') ?? '?';
      const who = text('approverId');
      return parts(`approval ${decision}`, who ? `by ${who}` : decision === 'expired' ? 'by nobody (expired)' : undefined, text('approvalId'));
    }
    case 'attempt.started':
      return 'attempt started';
    case 'attempt.finished':
      return parts('attempt finished', text('outcome'), text('code'), text('upstreamStatus') && `HTTP ${text('upstreamStatus')}`, text('latencyMs') && `${text('latencyMs')} ms`);
    case 'backoff.scheduled':
      return parts(`backoff ${text('delaySeconds') ?? '?'} s`, text('reason') && `(${text('reason')}${text('retryAfterSeconds') ? `, Retry-After ${text('retryAfterSeconds')} s` : ''})`);
    case 'reconcile.started':
      return parts('reconcile started', text('plan') && `(${text('plan')})`);
    case 'reconcile.finished':
      return parts('reconcile finished', text('result'), text('action') && `→ ${text('action')}`, text('verdict') && `verdict ${text('verdict')}`, text('reviewerId') && `by ${text('reviewerId')}`, text('reason') && `(${text('reason')})`);
    case 'result.recorded':
      return parts('result recorded', text('outcome'), text('code'));
    case 'result.reported':
      return parts('result reported', text('status'));
    case 'result.late':
      return parts('LATE result recorded after the call closed', text('outcome'), text('code'), '(not reported)');
    case 'budget.exhausted':
      return parts('budget exhausted', text('reason') && `(${text('reason')})`, text('status') && `run ${text('status')}`);
    case 'run.cancelled':
      return parts('run cancelled', text('previousStatus') && `(was ${text('previousStatus')})`);
    default:
      return parts(event.type, Object.keys(d).length ? JSON.stringify(d) : undefined);
  }
}

/** Enough of a hash to tell calls apart on one screen. */
function short(hash: string): string {
  const hex = hash.replace(/^sha256:/, '');
  return hex.length > 12 ? `${hex.slice(0, 12)}…` : hex;
}
