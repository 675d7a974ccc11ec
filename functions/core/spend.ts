import type { Usage } from './model';

/**
 * Spend is counted in integer micro-cents (1e-6 cent) so that model prices (fractions of a cent per token)
 * add up exactly; caps stay in whole cents. A tool's `costCents` is whole, so its micro-cent form is exact.
 */
export const MICROS_PER_CENT = 1_000_000;

export function microsOfCents(cents: number): number {
  return Math.round(cents * MICROS_PER_CENT);
}

/** Micro-cents as cents with 4 decimal places (what usage reports), rounded half up. */
export function centsOfMicros(micros: number): number {
  return Math.round(micros / 100) / 10_000;
}

/** Micro-cents as whole cents, rounded up (Cedar's Long is whole: spend is never under-counted). */
export function wholeCentsOfMicros(micros: number): number {
  return Math.ceil(micros / MICROS_PER_CENT);
}

/** A run's tool spend: whole cents, as stored since before model spend. */
export function toolSpendMicrosOf(usage: Usage): number {
  return microsOfCents(usage.spendCents);
}

export function modelSpendMicrosOf(usage: Usage): number {
  return usage.modelSpendMicros ?? 0;
}

/** What the run has spent (tool and model), without reservations still open. */
export function spentMicrosOf(usage: Usage): number {
  return toolSpendMicrosOf(usage) + modelSpendMicrosOf(usage);
}

/**
 * What counts against the run's cap: spent plus open model reservations. A run that never reserved a model
 * call has no `heldMicros` (its tool spend is all it holds), so tool-only runs are written as before.
 */
export function heldMicrosOf(usage: Usage): number {
  return usage.heldMicros ?? toolSpendMicrosOf(usage);
}

/** The usage figures a run reports: cents with 4 decimal places. */
export function spendView(usage: Usage): { spendCents: number; modelSpendCents: number; toolSpendCents: number } {
  return {
    spendCents: centsOfMicros(spentMicrosOf(usage)),
    modelSpendCents: centsOfMicros(modelSpendMicrosOf(usage)),
    toolSpendCents: centsOfMicros(toolSpendMicrosOf(usage)),
  };
}
