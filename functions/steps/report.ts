import { accepts } from '../core/transition-table';
import type { LockStore, OperationStore, RateLimitStore, WithStore } from '../core/ports';
import { advance } from './advance';
import { lockKeyOf, releaseLockIfSettled } from './locks';
import { leftAt, type StepResult } from './step-result';

/** Report's Lambda: builds the envelope from the recorded outcome and marks it delivered to the model. */
export async function reportEnvelope(
  deps: WithStore<OperationStore & LockStore & RateLimitStore>,
  operationId: string,
): Promise<StepResult> {
  const out = await advance(deps, operationId, (op) => ({ value: undefined, events: accepts(op, 'report') ? [{ type: 'report' }] : [] }));
  await releaseLockIfSettled(deps, await lockKeyOf(deps, out.op, deps.tools.get(out.op.toolName)), out.op);
  return leftAt(out.op, deps.now());
}
