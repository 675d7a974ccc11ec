import type { OperationStore, WithStore } from '../core/ports';
import { mustGet } from './advance';
import { executionNameOf } from './deps';
import { leftAt, type StepResult } from './step-result';

/**
 * Handoff's Lambda (Express machine only): the operation needs what Express cannot give (a person's
 * decision, a long wait), so the Standard machine continues it from its record, under the same name.
 * This execution ends here (`done`); the record is as it was read.
 */
export async function handOffToStandard(deps: WithStore<OperationStore>, operationId: string): Promise<StepResult> {
  const [op, config] = await Promise.all([mustGet(deps, operationId), deps.config()]);
  const input = leftAt(op, deps.now(), config.approvalTtlSeconds).output;
  if (input.next !== 'done') await deps.lifecycle.start(input, executionNameOf(op), 'standard');
  return { output: { operationId, next: 'done' }, op };
}
