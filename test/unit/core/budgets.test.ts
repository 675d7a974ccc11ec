import { describe, expect, it } from 'vitest';
import { admissionHolds, admitCall, applyAdmission, identicalCallKey, mayContinue, withClock } from '../../../functions/core/budgets';
import type { RunRecord } from '../../../functions/core/model';

const now = Date.parse('2026-11-30T12:00:00Z');
const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  runId: 'run_1',
  principalId: 'p',
  status: 'open',
  budgets: { maxTurns: 2, maxToolCalls: 3, maxWallClockSeconds: 60, maxSpendCents: 1000 },
  usage: { turns: 0, toolCalls: 0, spendCents: 0 },
  lastTurn: 0,
  createdAt: new Date(now - 1000).toISOString(),
  updatedAt: '',
  deadlineAt: new Date(now + 59_000).toISOString(),
  ...over,
});

describe('budgets', () => {
  it('counts tool calls and distinct turns', () => {
    const a = admitCall(run(), 1, 0, now);
    expect(a).toMatchObject({ admitted: true, run: { usage: { turns: 1, toolCalls: 1 }, lastTurn: 1 } });
    const b = admitCall((a as { run: RunRecord }).run, 1, 0, now);
    expect(b).toMatchObject({ admitted: true, run: { usage: { turns: 1, toolCalls: 2 } } });
    const c = admitCall((b as { run: RunRecord }).run, 2, 0, now);
    expect(c).toMatchObject({ admitted: true, run: { usage: { turns: 2, toolCalls: 3 } } });
    expect(admitCall((c as { run: RunRecord }).run, 2, 0, now)).toMatchObject({
      admitted: false,
      reason: 'budget_exhausted',
      run: { status: 'budget_exhausted' },
    });
    expect(admitCall(run({ usage: { turns: 2, toolCalls: 0, spendCents: 0 }, lastTurn: 2 }), 3, 0, now)).toMatchObject({
      admitted: false,
      reason: 'budget_exhausted',
    });
  });

  it('refuses new calls on closed runs, and says which', () => {
    expect(admitCall(run({ status: 'cancelled' }), 1, 0, now)).toEqual({ admitted: false, reason: 'run_closed' });
    expect(admitCall(run({ status: 'budget_exhausted' }), 1, 0, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted' });
    expect(withClock(run({ deadlineAt: new Date(now).toISOString() }), now).status).toBe('expired');
    expect(admitCall(run({ deadlineAt: new Date(now).toISOString() }), 1, 0, now)).toMatchObject({
      admitted: false,
      reason: 'budget_exhausted',
      message: expect.stringContaining('wall-clock'),
    });
  });

  it('reserves spend with the admission, and lets admitted calls go on after others exhausted the run', () => {
    expect(admitCall(run(), 1, 600, now)).toMatchObject({ admitted: true, run: { usage: { spendCents: 600 } } });
    expect(admitCall(run({ usage: { turns: 0, toolCalls: 0, spendCents: 600 } }), 1, 600, now)).toMatchObject({
      admitted: false,
      run: { status: 'budget_exhausted' },
    });
    expect(mayContinue(run({ status: 'budget_exhausted' }), now)).toEqual({ ok: true });
    expect(mayContinue(run({ status: 'cancelled' }), now)).toMatchObject({ ok: false, reason: 'run_closed' });
    expect(mayContinue(run({ deadlineAt: new Date(now - 1).toISOString() }), now)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('states as a condition exactly what admission checks, so a store can apply it atomically', () => {
    const runs = [
      run(),
      run({ lastTurn: 1, usage: { turns: 1, toolCalls: 2, spendCents: 900 } }),
      run({ lastTurn: 2, usage: { turns: 2, toolCalls: 1, spendCents: 0 } }),
      run({ status: 'cancelled' }),
    ];
    for (const r of runs) {
      for (const turn of [0, 1, 2, 3]) {
        for (const cost of [0, 100, 1000]) {
          const a = admitCall(r, turn, cost, now);
          const delta = { turn, opensTurn: turn > r.lastTurn, costCents: cost };
          expect(admissionHolds(r, delta, now), JSON.stringify({ r: r.usage, status: r.status, turn, cost })).toBe(a.admitted);
        }
      }
    }
  });

  it('the loop fuse: the same tool and arguments past maxIdenticalCalls is refused, the run stays open and uncounted', () => {
    const key = identicalCallKey('search', 'hash_a');
    expect(identicalCallKey('search', 'hash_b')).not.toBe(key);
    expect(identicalCallKey('lookup', 'hash_a')).not.toBe(key);
    let fused = run({ budgets: { ...run().budgets, maxToolCalls: 10, maxIdenticalCalls: 2 }, identicalCalls: {} });
    for (let i = 0; i < 2; i++) {
      const a = admitCall(fused, 1, 0, now, key);
      expect(a.admitted).toBe(true);
      if (a.admitted) fused = applyAdmission(fused, a.delta);
    }
    expect(fused.identicalCalls).toEqual({ [key]: 2 });
    const third = admitCall(fused, 1, 0, now, key);
    expect(third).toMatchObject({ admitted: false, reason: 'loop_detected' });
    expect(admissionHolds(fused, { turn: 1, opensTurn: false, costCents: 0, identicalKey: key }, now)).toBe(false);
    // Other arguments are another call.
    expect(admitCall(fused, 1, 0, now, identicalCallKey('search', 'hash_b')).admitted).toBe(true);
    // Without a fuse nothing is counted.
    const plain = admitCall(run(), 1, 0, now, key);
    expect(plain.admitted).toBe(true);
    expect(plain.admitted && 'identicalKey' in plain.delta).toBe(false);
  });

  it('caps model and tool spend together, in micro-cents', () => {
    // 999.75 cents held: 999 cents of tools and 0.75 of model spend; a tool costing 1 cent no longer fits.
    const held = run({
      usage: { turns: 1, toolCalls: 1, spendCents: 999, modelSpendMicros: 750_000, reservedMicros: 0, heldMicros: 999_750_000 },
      lastTurn: 1,
    });
    expect(admitCall(held, 1, 1, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted' });
    expect(admissionHolds(held, { turn: 1, opensTurn: false, costCents: 1 }, now)).toBe(false);
    // A free call still fits, and the held total follows the tool spend.
    const admitted = admitCall(held, 1, 0, now);
    expect(admitted).toMatchObject({ admitted: true, run: { usage: { spendCents: 999, heldMicros: 999_750_000 } } });
    const lighter = run({
      usage: { turns: 1, toolCalls: 1, spendCents: 998, modelSpendMicros: 750_000, reservedMicros: 0, heldMicros: 998_750_000 },
      lastTurn: 1,
    });
    expect(admitCall(lighter, 1, 1, now)).toMatchObject({ admitted: true, run: { usage: { spendCents: 999, heldMicros: 999_750_000 } } });
    // A tool-only run is written as before: no micro-cent fields.
    expect((admitCall(run(), 1, 600, now) as { run: RunRecord }).run.usage).toEqual({ turns: 1, toolCalls: 1, spendCents: 600 });
  });
});
