import type { Budgets, RunRecord } from './model';

export const DEFAULT_BUDGETS: Budgets = {
  maxTurns: 50,
  maxToolCalls: 200,
  maxWallClockSeconds: 3600,
  maxSpendCents: 100_000,
};

export type Admission =
  | { admitted: true; run: RunRecord }
  | { admitted: false; reason: 'run_closed' }
  | { admitted: false; reason: 'budget_exhausted'; message: string; run: RunRecord };

/** The run's state after its wall-clock budget is applied at `now`. */
export function withClock(run: RunRecord, now: number): RunRecord {
  if (run.status === 'open' && now >= Date.parse(run.deadlineAt)) return { ...run, status: 'expired' };
  return run;
}

/**
 * Admits one tool call against the run's turn and tool-call budgets. The caller writes the returned
 * run with a condition on the version it read, so concurrent calls can never overspend.
 */
export function admitCall(run: RunRecord, turn: number, now: number): Admission {
  const clocked = withClock(run, now);
  if (clocked.status === 'cancelled') return { admitted: false, reason: 'run_closed' };
  if (clocked.status !== 'open') {
    return { admitted: false, reason: 'budget_exhausted', message: exhaustedMessage(clocked), run: clocked };
  }
  const opensTurn = turn > run.lastTurn;
  const turns = run.usage.turns + (opensTurn ? 1 : 0);
  const toolCalls = run.usage.toolCalls + 1;
  if (turns > run.budgets.maxTurns) {
    return { admitted: false, reason: 'budget_exhausted', message: `the run reached its turn budget (${run.budgets.maxTurns})`, run: { ...run, status: 'budget_exhausted' } };
  }
  if (toolCalls > run.budgets.maxToolCalls) {
    return { admitted: false, reason: 'budget_exhausted', message: `the run reached its tool-call budget (${run.budgets.maxToolCalls})`, run: { ...run, status: 'budget_exhausted' } };
  }
  return {
    admitted: true,
    run: { ...run, lastTurn: Math.max(run.lastTurn, turn), usage: { ...run.usage, turns, toolCalls } },
  };
}

/**
 * Whether an operation the run already admitted may go on: only cancellation and the wall clock stop it.
 * A run exhausted by later calls does not take back a call it admitted, so N concurrent calls against
 * a budget of M run exactly M.
 */
export function mayContinue(run: RunRecord, now: number): { ok: true } | { ok: false; reason: 'run_closed' | 'expired'; message: string } {
  const clocked = withClock(run, now);
  if (clocked.status === 'cancelled') return { ok: false, reason: 'run_closed', message: 'the run was cancelled' };
  if (clocked.status === 'expired') return { ok: false, reason: 'expired', message: exhaustedMessage(clocked) };
  return { ok: true };
}

/** Reserves spend for one admitted operation at validation; refusing it exhausts the run. */
export function reserveSpend(run: RunRecord, cents: number, now: number): Admission {
  const going = mayContinue(run, now);
  if (!going.ok) return going.reason === 'run_closed' ? { admitted: false, reason: 'run_closed' } : { admitted: false, reason: 'budget_exhausted', message: going.message, run: withClock(run, now) };
  if (cents <= 0) return { admitted: true, run };
  const spendCents = run.usage.spendCents + cents;
  if (spendCents > run.budgets.maxSpendCents) {
    return { admitted: false, reason: 'budget_exhausted', message: `the call would exceed the run's spend budget (${run.budgets.maxSpendCents} cents)`, run: { ...run, status: 'budget_exhausted' } };
  }
  return { admitted: true, run: { ...run, usage: { ...run.usage, spendCents } } };
}

function exhaustedMessage(run: RunRecord): string {
  return run.status === 'expired' ? 'the run reached its wall-clock budget' : 'the run has exhausted its budget';
}
