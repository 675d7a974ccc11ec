import { deflateRawSync, inflateRawSync } from 'node:zlib';
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

/** The first byte of a block's `body`: how the rest was compressed. 1: deflate with `BLOCK_DICTIONARY_1`. */
const BLOCK_FORMAT = 1;
/**
 * What deflate starts from (a preset dictionary): the names and values of a call's usual events, so a
 * block of a handful costs a few bytes an event. Frozen: blocks of format 1 are read with exactly this text.
 */
const BLOCK_DICTIONARY_1 = Buffer.from(
  '{"owner":"op_","operationId":"op_","callId":"call_","events":[{"type":"approval.requested","detail":{"approvalId":"apr_","expiresAt":"20"}},' +
    '{"type":"approval.decided","detail":{"decision":"approved","by":""}},{"type":"backoff.scheduled","detail":{"reason":"","notBefore":"20"}},' +
    '{"type":"reconcile.started"},{"type":"reconcile.finished","detail":{"found":false}},{"type":"review.required","detail":{"reason":""}},' +
    '{"type":"state.transition","from":"executing","to":"outcome_unknown","attempt":1},{"type":"attempt.finished","attempt":2,"detail":{"outcome":"failed_retryable","code":"upstream_unavailable","upstreamStatus":503}},' +
    '{"type":"operation.proposed","to":"proposed","detail":{"toolName":"","turn":1,"inputHash":"sha256:","requestedBy":""}},' +
    '{"type":"policy.decision","detail":{"decision":"allow","approval":"not_required","risk":"irreversible_write","costCents":0}},' +
    '{"type":"state.transition","from":"proposed","to":"validated"},{"type":"state.transition","from":"validated","to":"executing","attempt":1},' +
    '{"type":"attempt.started","attempt":1},{"type":"attempt.finished","attempt":1,"detail":{"outcome":"succeeded","resultHash":"sha256:","upstreamStatus":200,"latencyMs":1}},' +
    '{"type":"state.transition","from":"executing","to":"recorded","attempt":1},{"type":"result.recorded","detail":{"outcome":"succeeded","resultHash":"sha256:"}},' +
    '{"type":"state.transition","from":"recorded","to":"reported","attempt":1},{"type":"result.reported","detail":{"status":"succeeded"}}]}',
);

/**
 * A block as its item holds it: the key (`runId`, `seq`) and TTL as they are (the block's condition and the
 * run's query read them), everything else as one deflated `body`. Only storage is billed for the bytes here
 * (every block is under 1 KB either way), held as long as the run's records.
 */
export function toBlockItem(packed: PackedEvents, expiresAtEpoch: number | undefined): Record<string, unknown> {
  const { runId, seq, ...rest } = packed;
  const deflated = deflateRawSync(JSON.stringify(rest), { level: 9, dictionary: BLOCK_DICTIONARY_1 });
  return { runId, seq, body: Buffer.concat([Uint8Array.of(BLOCK_FORMAT), deflated]), ...(expiresAtEpoch ? { expiresAtEpoch } : {}) };
}

/** The block an item holds, whether written by `toBlockItem` or, before it, with every field an attribute. */
export function fromBlockItem(item: Record<string, unknown>): PackedEvents {
  const body = item.body;
  if (!(body instanceof Uint8Array)) return item as unknown as PackedEvents;
  if (body[0] !== BLOCK_FORMAT) throw new Error(`a trace block of unknown format ${body[0]} (run ${item.runId}, seq ${item.seq})`);
  const rest = JSON.parse(inflateRawSync(body.subarray(1), { dictionary: BLOCK_DICTIONARY_1 }).toString('utf8')) as Omit<
    PackedEvents,
    'runId' | 'seq'
  >;
  return { runId: item.runId as string, seq: item.seq as number, ...rest };
}
