import { invalidOutput } from '../core/classify';
import type { Outcome } from '../core/model';
import type { Deps } from '../core/ports';
import { describeBytes, RESULT_LIMITS, resultBlobKey } from '../core/result-record';
import type { ToolSpec } from '../core/tool-spec';

/**
 * Puts a checked result where the record can keep it: small ones stay in the record (`json`), larger ones
 * go to the blob store first and the record keeps their key (`ref`), so no record write can exceed an
 * item limit. `label` tells results of one operation apart (the attempt, or a lookup after it).
 */
export async function placeResult(
  deps: Pick<Deps, 'blobs'>,
  tool: Pick<ToolSpec, 'risk'>,
  operationId: string,
  label: string,
  outcome: Outcome,
): Promise<Outcome> {
  if (outcome.kind !== 'succeeded' || outcome.result?.json === undefined || outcome.result.bytes <= RESULT_LIMITS.inlineBytes)
    return outcome;
  if (!deps.blobs)
    return invalidOutput(
      tool,
      `the tool's output cannot be recorded: it is larger than ${describeBytes(RESULT_LIMITS.inlineBytes)} and no blob store is configured`,
    );
  const { json, ...rest } = outcome.result;
  const ref = resultBlobKey(operationId, label, rest.sha256);
  await deps.blobs.put(ref, json);
  return { ...outcome, result: { ...rest, ref } };
}
