import { formatCents, revealInvisible } from './format';

/**
 * A run's trace as a timeline model: events grouped by operation, one line of text per event, times
 * relative to the run's first event. Pure: the HTML trace page and the terminal (`toolrunner trace`) render
 * this same model, so a person reads the same words in both.
 */

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

/** What a line is about, for styling and filtering; the text says it in words. */
export type LineKind =
  | 'proposal'
  | 'policy'
  | 'transition'
  | 'approval'
  | 'attempt'
  | 'backoff'
  | 'reconcile'
  | 'result'
  | 'late'
  | 'replay'
  | 'conflict'
  | 'budget'
  | 'run'
  | 'other';

export interface TimelineLine {
  seq: number;
  at: string;
  /** Milliseconds since the run's first event. */
  offsetMs: number;
  /** `+1.234s` */
  offset: string;
  attempt?: number;
  type: string;
  kind: LineKind;
  /** A line that needs a person's eye: a failure, an unknown outcome, a conflict, a late result, a review. */
  notable: boolean;
  text: string;
}

/** What the viewer may see of an operation's data, already redacted by the caller. */
export interface OperationDetails {
  arguments?: unknown;
  result?: unknown;
}

export interface TimelineGroup {
  /** Absent for the run's own events (cancellation, budget closings without an operation). */
  operationId?: string;
  title: string;
  toolName?: string;
  callId?: string;
  turn?: number;
  lines: TimelineLine[];
  details?: OperationDetails;
}

export interface TimelineModel {
  runId?: string;
  /** `run run_1: 13 events, 2 operations, 3.700s`, or `no events`. */
  summary: string;
  eventCount: number;
  operationCount: number;
  spanMs: number;
  groups: TimelineGroup[];
}

/** Builds the model; `details` adds what the viewer may see of each operation's arguments and result. */
export function timelineModel(events: readonly TimelineEvent[], details: Readonly<Record<string, OperationDetails>> = {}): TimelineModel {
  if (events.length === 0) return { summary: 'no events', eventCount: 0, operationCount: 0, spanMs: 0, groups: [] };
  const ordered = [...events].sort((a, b) => a.seq - b.seq);
  const times = ordered.map((e) => Date.parse(e.at));
  const start = Math.min(...times);
  const spanMs = Math.max(...times) - start;
  const byOperation = new Map<string, TimelineEvent[]>();
  for (const event of ordered) {
    const key = event.operationId ?? '';
    byOperation.set(key, [...(byOperation.get(key) ?? []), event]);
  }
  const operationCount = [...byOperation.keys()].filter((k) => k !== '').length;
  const groups: TimelineGroup[] = [];
  const runLevel = byOperation.get('');
  if (runLevel) groups.push({ title: 'run', lines: runLevel.map((e) => lineOf(e, start)) });
  for (const [operationId, group] of byOperation) {
    if (!operationId) continue;
    const proposed = group.find((e) => e.type === 'operation.proposed');
    const toolName = typeof proposed?.detail?.toolName === 'string' ? proposed.detail.toolName : undefined;
    const turn = typeof proposed?.detail?.turn === 'number' ? proposed.detail.turn : undefined;
    const callId = group[0].callId;
    groups.push({
      operationId,
      title: `${operationId}${toolName ? ` ${toolName}` : ''}  call ${callId ?? '?'}${turn !== undefined ? ` turn ${turn}` : ''}`,
      toolName,
      callId,
      turn,
      lines: group.map((e) => lineOf(e, start)),
      ...(details[operationId] ? { details: details[operationId] } : {}),
    });
  }
  return {
    runId: ordered[0].runId,
    summary: `run ${ordered[0].runId}: ${ordered.length} events, ${operationCount} operation${operationCount === 1 ? '' : 's'}, ${seconds(spanMs)}`,
    eventCount: ordered.length,
    operationCount,
    spanMs,
    groups,
  };
}

/**
 * The model as terminal text: a summary line, then each group's title and its indented lines. Invisible and
 * direction-changing characters show as `<U+202E>`, as on the pages: a terminal would obey them too.
 */
export function renderTimelineText(model: TimelineModel): string {
  if (model.eventCount === 0) return 'no events\n';
  const out = [model.summary];
  for (const group of model.groups) {
    out.push('', group.title);
    for (const line of group.lines) {
      const attempt = line.attempt !== undefined ? `#${line.attempt}` : '';
      out.push(`  ${line.offset.padStart(9)}  ${attempt.padEnd(3)} ${line.text}`.trimEnd());
    }
  }
  return `${revealInvisible(out.join('\n'))}\n`;
}

/** Events straight to terminal text (what `toolrunner trace RUN_ID` prints). */
export function formatTimeline(events: readonly TimelineEvent[]): string {
  return renderTimelineText(timelineModel(events));
}

function lineOf(event: TimelineEvent, start: number): TimelineLine {
  const offsetMs = Math.max(0, Date.parse(event.at) - start);
  return {
    seq: event.seq,
    at: event.at,
    offsetMs,
    offset: `+${seconds(offsetMs)}`,
    ...(event.attempt !== undefined ? { attempt: event.attempt } : {}),
    type: event.type,
    kind: kindOf(event.type),
    notable: isNotable(event),
    text: describe(event),
  };
}

function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(3)}s`;
}

const KINDS: Record<string, LineKind> = {
  'operation.proposed': 'proposal',
  'policy.decision': 'policy',
  'policy.shadow': 'policy',
  'state.transition': 'transition',
  'approval.requested': 'approval',
  'approval.decided': 'approval',
  'approval.escalated': 'approval',
  'approval.reminded': 'approval',
  'attempt.started': 'attempt',
  'attempt.finished': 'attempt',
  'backoff.scheduled': 'backoff',
  'reconcile.started': 'reconcile',
  'reconcile.finished': 'reconcile',
  'result.recorded': 'result',
  'result.reported': 'result',
  'result.late': 'late',
  'operation.replayed': 'replay',
  'call.conflict': 'conflict',
  'budget.exhausted': 'budget',
  'run.cancelled': 'run',
};

function kindOf(type: string): LineKind {
  return KINDS[type] ?? 'other';
}

function isNotable(event: TimelineEvent): boolean {
  const d = event.detail ?? {};
  if (['result.late', 'call.conflict', 'budget.exhausted', 'run.cancelled'].includes(event.type)) return true;
  if (event.type === 'state.transition') return event.to === 'outcome_unknown';
  if (event.type === 'attempt.finished' || event.type === 'result.recorded') return d.outcome !== undefined && d.outcome !== 'succeeded';
  if (event.type === 'reconcile.finished') return d.result === 'needs_review' || d.result === 'resolved_by_reviewer';
  if (event.type === 'approval.decided') return d.decision !== 'approve';
  return false;
}

/** What happened, in words; unknown types still show their type and detail. */
/** The determining policy ids of a decision, as `by a, b` (the call's, then its unattended action's). */
function policyIdsText(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const { call, unattended } = value as { call?: unknown; unattended?: unknown };
  return (
    [idsText(call), Array.isArray(unattended) && `unattended ${idsText(unattended) ?? 'by no policy'}`].filter(Boolean).join(', ') ||
    undefined
  );
}

function idsText(value: unknown): string | undefined {
  return Array.isArray(value) && value.length > 0 ? `by ${value.map(String).join(', ')}` : undefined;
}

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
      return parts(
        'policy',
        text('decision'),
        text('code'),
        text('approval') && `approval ${text('approval')}`,
        text('risk'),
        typeof d.costCents === 'number' && `cost ${formatCents(d.costCents)}`,
        policyIdsText(d.policies),
      );
    case 'policy.shadow':
      return parts('log-only policies would', text('decision'), `(enforced: ${text('enforced') ?? '?'})`, idsText(d.policies));
    case 'approval.requested':
      return parts('approval requested', text('approvalId'), text('expiresAt') && `expires ${text('expiresAt')}`);
    case 'approval.decided': {
      const decision = text('decision') ?? '?';
      const who = text('approverId');
      return parts(
        `approval ${decision}`,
        who ? `by ${who}` : decision === 'expired' ? 'by nobody (expired)' : undefined,
        text('approvalId'),
        text('reason') && `— reason: ${quote(text('reason')!)}`,
      );
    }
    case 'approval.escalated':
    case 'approval.reminded': {
      const who = Array.isArray(d.recipients) ? d.recipients.map(String).join(', ') : '?';
      const verb = event.type === 'approval.escalated' ? 'approval escalated to' : 'approval reminder to';
      return parts(verb, who, text('afterMinutes') && `after ${text('afterMinutes')} min`, text('approvalId'));
    }
    case 'attempt.started':
      return 'attempt started';
    case 'attempt.finished':
      return parts(
        'attempt finished',
        text('outcome'),
        text('code'),
        text('upstreamStatus') && `HTTP ${text('upstreamStatus')}`,
        text('latencyMs') && `${text('latencyMs')} ms`,
      );
    case 'backoff.scheduled':
      return parts(
        `backoff ${text('delaySeconds') ?? '?'} s`,
        text('reason') && `(${text('reason')}${text('retryAfterSeconds') ? `, Retry-After ${text('retryAfterSeconds')} s` : ''})`,
      );
    case 'reconcile.started':
      return parts('reconcile started', text('plan') && `(${text('plan')})`);
    case 'reconcile.finished':
      return parts(
        'reconcile finished',
        text('result'),
        text('action') && `→ ${text('action')}`,
        text('verdict') && `verdict ${text('verdict')}`,
        text('reviewerId') && `by ${text('reviewerId')}`,
        text('reason') && `(${text('reason')})`,
        text('note') && `— note: ${quote(text('note')!)}`,
      );
    case 'result.recorded':
      return parts('result recorded', text('outcome'), text('code'));
    case 'result.reported':
      return parts('result reported', text('status'));
    case 'result.late':
      return parts('LATE result recorded after the call closed', text('outcome'), text('code'), '(not reported)');
    case 'operation.replayed':
      return parts(
        'duplicate submission replayed',
        text('requestedBy') && `from ${text('requestedBy')}`,
        text('state') && `(operation ${text('state')}; nothing ran again)`,
      );
    case 'call.conflict':
      return parts(
        'CONFLICT: callId reused with different arguments → 409 call_id_conflict',
        text('storedInputHash') && `(stored args ${short(text('storedInputHash')!)},`,
        text('submittedInputHash') &&
          `sent ${short(text('submittedInputHash')!)}${text('toolName') && text('toolName') !== text('storedToolName') ? ` for ${text('toolName')}` : ''})`,
      );
    case 'budget.exhausted':
      return parts('budget exhausted', text('reason') && `(${text('reason')})`, text('status') && `run ${text('status')}`);
    case 'run.cancelled':
      return parts('run cancelled', text('previousStatus') && `(was ${text('previousStatus')})`);
    default:
      return parts(event.type, Object.keys(d).length ? JSON.stringify(d) : undefined);
  }
}

function short(hash: string): string {
  return hash.length > 12 ? `${hash.slice(0, 12)}…` : hash;
}

/** A person's words, on one line and bounded, so a long reason cannot break the timeline's layout. */
function quote(words: string): string {
  const flat = words.replace(/\s+/g, ' ').trim();
  return `"${flat.length > 200 ? `${flat.slice(0, 199)}…` : flat}"`;
}
