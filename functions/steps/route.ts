import type { OperationStore, WithStore } from '../core/ports';
import { mustGet } from './advance';
import { leftAt, type StepResult } from './step-result';

/**
 * What the `Validate` Lambda runs (its deployed name, from when it validated the call; the submission validates
 * now): the entry of every execution, first or resumed, which routes by the durable record alone.
 */
export async function routeByRecord(deps: WithStore<OperationStore>, operationId: string): Promise<StepResult> {
  const [op, config] = await Promise.all([mustGet(deps, operationId), deps.config()]);
  return leftAt(op, deps.now(), config.approvalTtlSeconds);
}
