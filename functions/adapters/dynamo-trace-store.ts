import type { TraceStore } from '../core/ports';
import type { DynamoStoreContext } from './dynamo-store-context';
import { unpackEvents } from './dynamo-trace-blocks';

/** A run's trace in the events table: the blocks of events no record names are never shown. */
export function makeDynamoTraceStore(ctx: DynamoStoreContext): TraceStore {
  return {
    async appendRunEvents(runId, events, expiresAtEpoch) {
      // One item holds the whole block, so it lands whole or not at all, never half a story.
      return ctx.trace.putBlock(runId, events, ctx.nowIso(), expiresAtEpoch);
    },

    async listEvents(runId) {
      const items = await ctx.eventItems(runId);
      const owners = await ctx.readOperations([...new Set(items.flatMap((i) => (i.owner ? [i.owner] : [])))]);
      return items.filter((i) => !i.owner || owners.get(i.owner)?.traceSeqs?.includes(i.seq)).flatMap(unpackEvents);
    },
  };
}
