/**
 * Trace sequence numbers without a shared counter (a counter is one more write, and one more round trip,
 * on every step). `seq = slot × 64 + index`: a slot is a millisecond since 2026 times 64 plus a random
 * sub-slot, and each stored block of events (at most 64) holds one slot. Writers never wait on each other:
 * two that pick the same slot in one run collide on the block's conditional put, and the loser picks again.
 *
 * So numbers are unique per run, and a block numbers after the floor its writer read (the operation's own
 * last block) and after every block of its process: one operation's story, and one process's, stay in order
 * whatever the clocks. Between processes (say a replay noted by one Lambda and the result it replays written
 * by another), order is that of their clocks. Numbers are not contiguous, and stay below 2^53 until about 2095.
 */
export const EVENTS_PER_BLOCK = 64;
const SUBSLOTS = 64;
const EPOCH_MS = Date.UTC(2026, 0, 1);

export interface TraceClock {
  /** The first sequence number of a new block: after `floorSeq`, and after every block this process numbered. */
  nextBlock(floorSeq?: number): number;
}

export function makeTraceClock(clock: () => number, random: () => number = Math.random): TraceClock {
  let last = -1;
  return {
    nextBlock(floorSeq = -1) {
      const fromClock = (clock() - EPOCH_MS) * SUBSLOTS + Math.floor(random() * SUBSLOTS);
      last = Math.max(fromClock, Math.floor(floorSeq / EVENTS_PER_BLOCK) + 1, last + 1);
      return last * EVENTS_PER_BLOCK;
    },
  };
}
