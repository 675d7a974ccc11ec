import type { OperationRecord } from '../core/model';
import { stepOutput, type StepOutput } from '../core/next-step';

/**
 * What every step returns: where the lifecycle goes next (what its Lambda hands Step Functions), and the
 * record as the step left it (the version it wrote, or read when it had nothing to write), so a caller in
 * the same process (the API running the first attempt itself) learns the result without reading it back.
 */
export interface StepResult {
  output: StepOutput;
  op: OperationRecord;
}

/** The result of a step that leaves the operation as `op`: its output derived from the record, as every step's is. */
export function leftAt(op: OperationRecord, now: number, approvalTtlSeconds?: number): StepResult {
  return { output: stepOutput(op, now, approvalTtlSeconds), op };
}
