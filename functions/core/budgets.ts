import { sha256 } from './canonical';
import type { Budgets, RunRecord } from './model';
import { heldMicrosOf, microsOfCents } from './spend';

export const DEFAULT_BUDGETS: Budgets = {
  maxTurns: 50,
  maxToolCalls: 200,
  maxWallClockSeconds: 3600,
  maxSpendCents: 100_000,
};

/**
 * What one admitted call adds to its run. The store applies it with a condition on the budget fields only
 * (see `admissionHolds`), never on the whole run, so concurrent calls in one run do not invalidate each other.
 */
export interface AdmissionDelta {
  turn: number;
  opensTurn: boolean;
  costCents: number;
  /** The loop fuse's count this call adds to (`identicalCallKey`), where the run has `maxIdenticalCalls`. */
  identicalKey?: string;
}

/** The loop fuse for the runs the MCP server and the framework adapters create: a sixth identical call is refused. */
export const AGENT_RUN_MAX_IDENTICAL_CALLS = 5;

/** What counts as the same call again: the tool and the hash of its arguments (short: it names a map attribute). */
export function identicalCallKey(toolName: string, inputHash: string): string {
  return sha256(`${toolName}\u0000${inputHash}`).slice(0, 24);
}

/**
 * The loop fuse's key for a validated call: its frozen arguments, so that keys the schema strips and nulls sent
 * for optional fields do not make a repeated call look new. (Where nothing was stripped, the frozen arguments hash
 * as the sent ones do, so counts kept before this rule still match.)
 */
export function frozenCallKey(toolName: string, frozenArguments: string): string {
  return identicalCallKey(toolName, sha256(frozenArguments));
}

function identicalCount(run: RunRecord, key: string | undefined): number {
  return key === undefined ? 0 : (run.identicalCalls?.[key] ?? 0);
}

/** The run's loop fuse, if it has one and this call would go past it. */
export function loopRefusal(run: RunRecord, key: string | undefined): string | undefined {
  const max = run.budgets.maxIdenticalCalls;
  if (max === undefined || key === undefined || identicalCount(run, key) < max) return undefined;
  return `the run already made this call with these arguments ${max} times (maxIdenticalCalls); change the arguments or stop`;
}

export type Admission =
  | { admitted: true; delta: AdmissionDelta; run: RunRecord }
  | { admitted: false; reason: 'run_closed' }
  | { admitted: false; reason: 'budget_exhausted'; message: string; run: RunRecord }
  /** The loop fuse: the call is refused (`loop_detected`), the run stays open and nothing is counted. */
  | { admitted: false; reason: 'loop_detected'; message: string }
  /** Over the principal's `spendLimits` (decided beside the run's admission): refused, the run stays open, nothing counted. */
  | { admitted: false; reason: 'spend_limit'; message: string };

/** The run's state after its wall-clock budget is applied at `now`. */
export function withClock(run: RunRecord, now: number): RunRecord {
  if (run.status === 'open' && now >= Date.parse(run.deadlineAt)) return { ...run, status: 'expired' };
  return run;
}

/**
 * Admits one tool call against the run's turn, tool-call and spend budgets (spend only for a call that
 * validation allowed). Refusing exhausts the run: every later call gets `budget_exhausted` too.
 */
export function admitCall(run: RunRecord, turn: number, costCents: number, now: number, identicalKey?: string): Admission {
  const clocked = withClock(run, now);
  if (clocked.status === 'cancelled') return { admitted: false, reason: 'run_closed' };
  if (clocked.status !== 'open') return { admitted: false, reason: 'budget_exhausted', message: exhaustedMessage(clocked), run: clocked };
  const loop = loopRefusal(run, identicalKey);
  if (loop) return { admitted: false, reason: 'loop_detected', message: loop };
  // Counted only where the run has a fuse (its record then holds the counts).
  const counted = run.budgets.maxIdenticalCalls !== undefined ? identicalKey : undefined;
  const delta: AdmissionDelta = { turn, opensTurn: turn > run.lastTurn, costCents, ...(counted ? { identicalKey: counted } : {}) };
  const exhausted = (message: string): Admission => ({
    admitted: false,
    reason: 'budget_exhausted',
    message,
    run: { ...run, status: 'budget_exhausted' },
  });
  if (delta.opensTurn && run.usage.turns + 1 > run.budgets.maxTurns)
    return exhausted(`the run reached its turn budget (${run.budgets.maxTurns})`);
  if (run.usage.toolCalls + 1 > run.budgets.maxToolCalls)
    return exhausted(`the run reached its tool-call budget (${run.budgets.maxToolCalls})`);
  if (!spendFits(run, microsOfCents(costCents)))
    return exhausted(`the call would exceed the run's spend budget (${run.budgets.maxSpendCents} cents)`);
  return { admitted: true, delta, run: applyAdmission(run, delta) };
}

/**
 * The condition a store checks when it applies `delta` atomically: it holds exactly when `admitCall` on the
 * current run would admit the same delta. A store that finds it false re-reads the run and decides again.
 */
export function admissionHolds(run: RunRecord, delta: AdmissionDelta, now: number): boolean {
  if (run.status !== 'open' || now >= Date.parse(run.deadlineAt)) return false;
  if (run.usage.toolCalls >= run.budgets.maxToolCalls) return false;
  if (!spendFits(run, microsOfCents(delta.costCents))) return false;
  if (loopRefusal(run, delta.identicalKey)) return false;
  return delta.opensTurn ? run.lastTurn < delta.turn && run.usage.turns < run.budgets.maxTurns : run.lastTurn >= delta.turn;
}

export function applyAdmission(run: RunRecord, delta: AdmissionDelta): RunRecord {
  const key = delta.identicalKey;
  return {
    ...run,
    ...(key ? { identicalCalls: { ...run.identicalCalls, [key]: identicalCount(run, key) + 1 } } : {}),
    lastTurn: delta.opensTurn ? delta.turn : run.lastTurn,
    usage: {
      turns: run.usage.turns + (delta.opensTurn ? 1 : 0),
      toolCalls: run.usage.toolCalls + 1,
      spendCents: run.usage.spendCents + delta.costCents,
      ...(run.usage.modelSpendMicros !== undefined ? { modelSpendMicros: run.usage.modelSpendMicros } : {}),
      ...(run.usage.reservedMicros !== undefined ? { reservedMicros: run.usage.reservedMicros } : {}),
      // Kept only once the run has one (its first model reservation): tool-only runs are written as before.
      ...(run.usage.heldMicros !== undefined ? { heldMicros: run.usage.heldMicros + microsOfCents(delta.costCents) } : {}),
    },
  };
}

/** Whether `micros` more (a tool's cost, a model reservation) stays within the run's spend cap (model and tool). */
export function spendFits(run: RunRecord, micros: number): boolean {
  return heldMicrosOf(run.usage) + micros <= microsOfCents(run.budgets.maxSpendCents);
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

function exhaustedMessage(run: RunRecord): string {
  return run.status === 'expired' ? 'the run reached its wall-clock budget' : 'the run has exhausted its budget';
}
