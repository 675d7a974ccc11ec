import { describe, expect, it } from 'vitest';
import { admitCall, mayContinue, reserveSpend, withClock } from '../../functions/core/budgets';
import type { RunRecord } from '../../functions/core/model';

const now = Date.parse('2026-11-30T12:00:00Z');
const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1, runId: 'run_1', principalId: 'p', status: 'open',
  budgets: { maxTurns: 2, maxToolCalls: 3, maxWallClockSeconds: 60, maxSpendCents: 1000 },
  usage: { turns: 0, toolCalls: 0, spendCents: 0 }, lastTurn: 0,
  createdAt: new Date(now - 1000).toISOString(), updatedAt: '', deadlineAt: new Date(now + 59_000).toISOString(), seq: 0, ...over,
});

describe('budgets', () => {
  it('counts tool calls and distinct turns', () => {
    const a = admitCall(run(), 1, now);
    expect(a).toMatchObject({ admitted: true, run: { usage: { turns: 1, toolCalls: 1 }, lastTurn: 1 } });
    const b = admitCall((a as { run: RunRecord }).run, 1, now);
    expect(b).toMatchObject({ admitted: true, run: { usage: { turns: 1, toolCalls: 2 } } });
    const c = admitCall((b as { run: RunRecord }).run, 2, now);
    expect(c).toMatchObject({ admitted: true, run: { usage: { turns: 2, toolCalls: 3 } } });
    expect(admitCall((c as { run: RunRecord }).run, 2, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted', run: { status: 'budget_exhausted' } });
    expect(admitCall(run({ usage: { turns: 2, toolCalls: 0, spendCents: 0 }, lastTurn: 2 }), 3, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted' });
  });

  it('refuses new calls on closed runs, and says which', () => {
    expect(admitCall(run({ status: 'cancelled' }), 1, now)).toEqual({ admitted: false, reason: 'run_closed' });
    expect(admitCall(run({ status: 'budget_exhausted' }), 1, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted' });
    expect(withClock(run({ deadlineAt: new Date(now).toISOString() }), now).status).toBe('expired');
    expect(admitCall(run({ deadlineAt: new Date(now).toISOString() }), 1, now)).toMatchObject({ admitted: false, reason: 'budget_exhausted', message: expect.stringContaining('wall-clock') });
  });

  it('reserves spend once, and lets admitted calls go on after others exhausted the run', () => {
    expect(reserveSpend(run(), 600, now)).toMatchObject({ admitted: true, run: { usage: { spendCents: 600 } } });
    expect(reserveSpend(run({ usage: { turns: 0, toolCalls: 0, spendCents: 600 } }), 600, now)).toMatchObject({ admitted: false, run: { status: 'budget_exhausted' } });
    expect(mayContinue(run({ status: 'budget_exhausted' }), now)).toEqual({ ok: true });
    expect(mayContinue(run({ status: 'cancelled' }), now)).toMatchObject({ ok: false, reason: 'run_closed' });
    expect(mayContinue(run({ deadlineAt: new Date(now - 1).toISOString() }), now)).toMatchObject({ ok: false, reason: 'expired' });
  });
});
