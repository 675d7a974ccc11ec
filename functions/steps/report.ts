import { accepts, stepOutput, type StepOutput } from '../core/engine';
import type { Deps } from '../core/ports';
import { advance, mustGet } from './advance';
import { lockKeyOf, releaseLockIfSettled } from './locks';

/** Validate's Lambda: the entry of every execution, first or resumed; it routes by the durable record alone. */
export async function routeStep(deps: Deps, operationId: string): Promise<StepOutput> {
  const [op, config] = await Promise.all([mustGet(deps, operationId), deps.config()]);
  return stepOutput(op, deps.now(), config.approvalTtlSeconds);
}

/** Report's Lambda: builds the envelope from the recorded outcome and marks it delivered to the model. */
export async function reportStep(deps: Deps, operationId: string): Promise<StepOutput> {
  const out = await advance(deps, operationId, (op) => ({ value: undefined, events: accepts(op, 'report') ? [{ type: 'report' }] : [] }));
  const tool = deps.tools.get(out.op.toolName);
  if (tool && out.op.frozenArguments) await releaseLockIfSettled(deps, lockKeyOf(tool, JSON.parse(out.op.frozenArguments)), out.op);
  return stepOutput(out.op, deps.now());
}
