import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { OperationRecord } from '../core/model';
import type { NewTraceEvent, TraceEvent } from '../core/trace';
import { packEvents, toBlockItem } from './dynamo-trace-blocks';
import { EVENTS_PER_BLOCK, makeTraceClock } from './trace-clock';

/** How the DynamoDB store writes a run's trace: one item per write's events (a block), numbered by trace-clock.ts. */
export interface TraceWrites {
  /** Numbers a write's events as one block after `floorSeq`. */
  numbered(runId: string, events: NewTraceEvent[], at: string, floorSeq?: number): TraceEvent[];
  /** The conditional put of a numbered block, on its own or inside a transaction. */
  blockPut(
    events: TraceEvent[],
    expiresAtEpoch: number | undefined,
    owner?: string,
  ): { TableName: string; Item: Record<string, unknown>; ConditionExpression: string };
  /** Writes a block on its own, numbering it again while its number is taken. */
  putBlock(
    runId: string,
    events: NewTraceEvent[],
    at: string,
    expiresAtEpoch: number | undefined,
    owner?: string,
    floorSeq?: number,
  ): Promise<TraceEvent[]>;
  /** Writes an operation's block, numbered after the blocks `before` names. */
  writeBlock(op: OperationRecord, before: OperationRecord | undefined, events: NewTraceEvent[], at: string): Promise<TraceEvent[]>;
  /** The record after a write: it names the block of events written for it, after those of earlier writes. */
  naming(op: OperationRecord, earlier: number[] | undefined, traced: TraceEvent[]): OperationRecord;
}

export function makeTraceWrites(doc: DynamoDBDocumentClient, table: string, clock: () => number): TraceWrites {
  const stamps = makeTraceClock(clock);

  function numbered(runId: string, events: NewTraceEvent[], at: string, floorSeq?: number): TraceEvent[] {
    if (events.length > EVENTS_PER_BLOCK) throw new Error(`one write carries at most ${EVENTS_PER_BLOCK} trace events`);
    const first = stamps.nextBlock(floorSeq);
    return events.map((e, i) => ({ ...e, seq: first + i, at, runId }));
  }

  /**
   * The events of one write are one item, keyed by the first of their sequence numbers; the condition
   * catches two writers that picked the same block number, and the loser numbers its block again.
   */
  const blockPut = (events: TraceEvent[], expiresAtEpoch: number | undefined, owner?: string) => ({
    TableName: table,
    Item: toBlockItem(packEvents(events, owner), expiresAtEpoch),
    ConditionExpression: 'attribute_not_exists(seq)',
  });

  async function putBlock(
    runId: string,
    events: NewTraceEvent[],
    at: string,
    expiresAtEpoch: number | undefined,
    owner?: string,
    floorSeq?: number,
  ): Promise<TraceEvent[]> {
    if (!events.length) return [];
    for (;;) {
      const traced = numbered(runId, events, at, floorSeq);
      try {
        await doc.send(new PutCommand(blockPut(traced, expiresAtEpoch, owner)));
        return traced;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
  }

  return {
    numbered,
    blockPut,
    putBlock,
    /**
     * An operation's events are written as their own item just before the record that names them: two
     * plain writes cost half of one transaction of both (items in a transaction count twice). A crash in
     * between leaves a block no record names, which the trace never shows.
     */
    writeBlock: (op, before, events, at) =>
      putBlock(
        op.runId,
        events,
        at,
        op.expiresAtEpoch,
        op.operationId,
        before?.traceSeqs?.length ? Math.max(...before.traceSeqs) : undefined,
      ),
    naming: (op, earlier, traced) => ({
      ...op,
      traceSeqs: traced.length ? [...(earlier ?? []), traced[0].seq] : (earlier ?? []),
    }),
  };
}
