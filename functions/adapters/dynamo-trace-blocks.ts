import type { TraceEvent } from '../core/trace';

/**
 * One write's events as one item: their numbers are consecutive from the item's `seq`, and the run, the
 * time and (when they share it) the operation are said once, not per event. The item stays small.
 * `owner` marks a block written ahead of its operation's record, outside a transaction: it counts only
 * once that record names it in `traceSeqs` (a writer that lost its race leaves a block nobody names).
 */
export interface PackedEvents {
  runId: string;
  seq: number;
  at: string;
  owner?: string;
  operationId?: string;
  callId?: string;
  events: Omit<TraceEvent, 'seq' | 'at' | 'runId'>[];
}

export function packEvents(events: TraceEvent[], owner?: string): PackedEvents {
  const [first] = events;
  const shared = (key: 'operationId' | 'callId') => (events.every((e) => e[key] === first[key]) ? first[key] : undefined);
  const operationId = shared('operationId');
  const callId = shared('callId');
  return {
    runId: first.runId,
    seq: first.seq,
    at: first.at,
    ...(owner ? { owner } : {}),
    ...(operationId ? { operationId } : {}),
    ...(callId ? { callId } : {}),
    events: events.map(({ seq: _s, at: _a, runId: _r, operationId: op, callId: call, ...rest }) => ({
      ...(op && !operationId ? { operationId: op } : {}),
      ...(call && !callId ? { callId: call } : {}),
      ...rest,
    })),
  };
}

export function unpackEvents(item: PackedEvents | { events: TraceEvent[] }): TraceEvent[] {
  const packed = item as PackedEvents;
  return packed.events.map((e, i) => {
    // Items written before events were packed carry whole events.
    if ('seq' in e && 'runId' in e) return e as TraceEvent;
    const ids = { ...(packed.operationId ? { operationId: packed.operationId } : {}), ...(packed.callId ? { callId: packed.callId } : {}) };
    return { seq: packed.seq + i, at: packed.at, runId: packed.runId, ...ids, ...e } as TraceEvent;
  });
}
