import { envelopeOf } from '../core/next-step';
import type { Envelope } from '../core/envelope';
import type { OperationRecord, Outcome } from '../core/model';
import type { Deps } from '../core/ports';
import type { StoredResult } from '../core/result-record';

/**
 * The recorded result's JSON text: from the record, or from the blob store where a large one lives.
 * Undefined when there is none (a person confirmed the call) or its blob is gone (expired).
 */
export async function resultText(deps: Pick<Deps, 'blobs'>, result: StoredResult | undefined): Promise<string | undefined> {
  if (!result) return undefined;
  if (result.json !== undefined) return result.json;
  return result.ref ? deps.blobs?.get(result.ref) : undefined;
}

/** The result an outcome recorded, parsed; undefined where there is none. */
export async function resultValue(deps: Pick<Deps, 'blobs'>, outcome: Outcome | undefined): Promise<unknown> {
  if (outcome?.kind !== 'succeeded') return undefined;
  const text = await resultText(deps, outcome.result);
  return text === undefined ? undefined : JSON.parse(text);
}

/**
 * The envelope the model gets, assembled here from the record: the stored envelope points at the result
 * (it never copies it), so a success gets its result back, or `result_omitted: { bytes, sha256 }` when the
 * result is over the tool's `maxResultBytes`.
 */
export async function deliveredEnvelope(deps: Pick<Deps, 'blobs'>, op: OperationRecord): Promise<Envelope | undefined> {
  const envelope = envelopeOf(op);
  if (envelope?.status !== 'succeeded' || op.outcome?.kind !== 'succeeded' || !op.outcome.result) return envelope;
  const { bytes, sha256, omitted } = op.outcome.result;
  if (omitted) return { ...envelope, result_omitted: { bytes, sha256 } };
  const text = await resultText(deps, op.outcome.result);
  if (text === undefined) return { ...envelope, result_omitted: { bytes, sha256 } };
  return { ...envelope, result: JSON.parse(text) };
}
