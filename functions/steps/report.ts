import { accepts } from '../core/transition-table';
import { stepOutput, type StepOutput } from '../core/next-step';
import type { Deps } from '../core/ports';
import { advance, mustGet } from './advance';
import { executionNameOf } from './deps';
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

/**
 * Handoff's Lambda (Express machine only): the operation needs what Express cannot give (a person's
 * decision, a long wait), so the Standard machine continues it from its record, under the same name.
 */
export async function handoffStep(deps: Deps, operationId: string): Promise<StepOutput> {
  const [op, config] = await Promise.all([mustGet(deps, operationId), deps.config()]);
  const input = stepOutput(op, deps.now(), config.approvalTtlSeconds);
  if (input.next !== 'done') await deps.lifecycle.start(input, executionNameOf(op), 'standard');
  return { operationId, next: 'done' };
}
