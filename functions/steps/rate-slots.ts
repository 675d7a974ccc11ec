import type { OperationRecord } from '../core/model';
import type { RateLimitStore, WithStore } from '../core/ports';
import { isActive } from '../core/record-predicates';
import { logOf } from '../core/log';

/**
 * Frees the `concurrent` rate-limit slots an operation holds (commands/rate-limit-gate.ts) once it settles:
 * the write that moved it from active to settled is the one that frees them. Best effort: a slot not freed
 * here lapses at the operation's deadline, its lease.
 */
export async function freeRateSlotsIfSettled(
  deps: Pick<WithStore<RateLimitStore>, 'store' | 'log'>,
  before: OperationRecord,
  after: OperationRecord,
): Promise<void> {
  const held = after.rateSlots;
  if (!held?.keys.length || !isActive(before) || isActive(after)) return;
  try {
    await Promise.all(held.keys.map((key) => deps.store.giveBackRateSlot(key, held.holder)));
  } catch (error) {
    logOf(deps).warn('a rate-limit slot was not freed; it lapses at the operation deadline', {
      operationId: after.operationId,
      error: (error as Error).message,
    });
  }
}
