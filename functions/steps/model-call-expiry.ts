import { expiry } from '../core/model-calls';
import { rollupOfModelCharge } from '../core/rollups';
import { addToRollup } from './rollups';
import { ModelCallChangedError, type ModelCallStore, type WithStore } from '../core/ports';

/** Model call ids (`modelCallIdFor`) share the sweeper's watch list with operation ids. */
export function isModelCallId(id: string): boolean {
  return id.startsWith('mc_');
}

/**
 * The sweeper's look at a model call when its lease comes: still reserved after its lease, it is charged in
 * full (fail closed: the call may have happened); not yet due, it is watched again at its lease.
 */
export async function expireModelCallIfDue(
  deps: WithStore<Partial<ModelCallStore>>,
  modelCallId: string,
  now: string,
): Promise<string | undefined> {
  const { getModelCall, chargeModelCall } = deps.store;
  if (!getModelCall || !chargeModelCall) return undefined;
  const call = await getModelCall(modelCallId);
  if (call?.state !== 'reserved') return undefined;
  if (call.leaseUntil > now) return call.leaseUntil;
  const expired = expiry(call);
  try {
    const charged = await chargeModelCall({ before: call, after: expired.after, events: expired.events });
    await addToRollup(deps, rollupOfModelCharge(charged.model, charged.chargedMicros ?? 0, deps.now(), charged.expiresAtEpoch));
  } catch (error) {
    // Settled meanwhile: nothing left to charge.
    if (!(error instanceof ModelCallChangedError)) throw error;
  }
  return undefined;
}
