import type { RateLimit } from '../core/config';
import type { OperationRecord } from '../core/model';
import { newRateSlotHolder } from '../core/ids';
import type { OperationStore, RateLimitStore, WithStore } from '../core/ports';
import { rateTakes, retryAfterSeconds, type RateSubject, throttledMessage } from '../core/rate-limits';
import { logOf } from '../core/log';

/** A submission over a rate limit: nothing was created and no budget used; the caller may retry after the wait. */
export interface Throttled {
  kind: 'throttled';
  retryAfterSeconds: number;
  message: string;
}

interface Held {
  counts: string[];
  slots: string[];
}

/**
 * The rate limits of one submission (core/rate-limits.ts), taken from the store once the call would be
 * admitted, and given back if it is not created after all.
 *
 * Minute counts are one counter item per scope and minute (a conditional `ADD`). In-flight limits are not a
 * counter: a process that crashes between taking and giving back would leak the count for good. Each in-flight
 * call instead holds one of `concurrent` slot items, leased to its operation until the operation's deadline
 * and freed when it settles (steps/rate-slots.ts): a slot whose holder vanished frees itself at that deadline.
 */
export function rateGate(
  deps: Pick<WithStore<OperationStore & RateLimitStore>, 'store' | 'now' | 'random' | 'log'>,
  limits: readonly RateLimit[] | undefined,
  subject: RateSubject,
  operationId: string,
) {
  let held: Held | undefined;
  // Its own holder per submission: a concurrent duplicate (same operation id) that loses the create must not
  // free the slot of the one that won.
  const holder = newRateSlotHolder(operationId);

  async function giveBack(taken: Held): Promise<void> {
    // Best effort: a count not given back only makes its minute stricter; a slot not freed lapses at its lease.
    await Promise.all([
      ...taken.counts.map((key) => deps.store.giveBackRateCount(key)),
      ...taken.slots.map((key) => deps.store.giveBackRateSlot(key, holder)),
    ]).catch((error: Error) => logOf(deps).warn('a rate-limit count was not given back', { operationId, error: error.message }));
  }

  return {
    /** The slots the operation holds once created: it frees them when it settles. */
    slots: (): OperationRecord['rateSlots'] => (held?.slots.length ? { holder, keys: [...held.slots] } : undefined),

    /**
     * Takes what the limits that apply to the call need, when `counted` (the call would be admitted: allowed or
     * awaiting approval, within budget); a call that is not counted gives back what an earlier round took.
     * A call that `waitsForPerson` takes no slot every principal shares (core/rate-limits.ts); unless told so,
     * a call is taken to run now and takes every slot. An existing operation of the same (run, call) is
     * handed back instead, before anything is taken: a replay is never throttled.
     */
    async take(
      counted: boolean,
      deadlineAt: string | undefined,
      waitsForPerson = false,
    ): Promise<Throttled | { kind: 'existing'; op: OperationRecord } | undefined> {
      if (!counted) return this.giveBack();
      if (held) return undefined;
      const now = deps.now();
      const takes = rateTakes(limits, subject, now, deps.random(), { waitsForPerson });
      if (!takes.length) return undefined;
      // The create is a conditional put with no read first; here a read comes first, so a replay is not counted.
      const existing = await deps.store.getOperation(operationId);
      if (existing) return { kind: 'existing', op: existing };
      const taking: Held = { counts: [], slots: [] };
      const until = deadlineAt ? Date.parse(deadlineAt) : now;
      for (const take of takes) {
        let took: boolean;
        if (take.kind === 'perMinute') {
          took = await deps.store.takeRateCount(take.counterKey, take.limit, take.expiresAtEpoch);
          if (took) taking.counts.push(take.counterKey);
        } else {
          let slot: string | undefined;
          for (const key of take.slotKeys) {
            if (!(await deps.store.takeRateSlot(key, holder, until, now))) continue;
            slot = key;
            break;
          }
          took = slot !== undefined;
          if (slot) taking.slots.push(slot);
        }
        if (!took) {
          await giveBack(taking);
          const retryAfter = retryAfterSeconds(take, now);
          return { kind: 'throttled', retryAfterSeconds: retryAfter, message: throttledMessage(take, subject, retryAfter) };
        }
      }
      held = taking;
      return undefined;
    },

    /** Gives back what was taken (the operation was not created: a duplicate won the race, or the write failed). */
    async giveBack(): Promise<undefined> {
      const taken = held;
      held = undefined;
      if (taken) await giveBack(taken);
      return undefined;
    },
  };
}
