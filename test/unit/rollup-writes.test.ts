import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RollupAddition } from '../../functions/core/rollups';
import { addToRollup, ROLLUP_FLUSH_MS } from '../../functions/steps/rollups';

/**
 * The overview's rollup writes: a process sums its calls' additions and writes at most once per interval, so a
 * burst costs one write, not one a call; a call after a quiet spell is written at once.
 */
function world() {
  let clock = Date.parse('2026-12-07T10:00:05Z');
  const writes: RollupAddition[] = [];
  const store = {
    addToRollup: async (a: RollupAddition) => {
      writes.push(structuredClone(a));
    },
  };
  const deps = { store, now: () => clock, log: undefined } as never;
  const add = (minute: string, counters: Record<string, number>, expiresAtEpoch?: number) =>
    addToRollup(deps, { minute, counters, ...(expiresAtEpoch ? { expiresAtEpoch } : {}) });
  return { writes, add, advance: (ms: number) => (clock += ms) };
}

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllEnvs();
});

describe('rollup writes, summed per process', () => {
  it('writes a call after a quiet spell at once, and a burst once per interval with every counter summed', async () => {
    vi.useFakeTimers();
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'Api');
    const { writes, add, advance } = world();
    await add('2026-12-07T10:00', { c_succeeded: 1, h_3: 1 }, 100);
    expect(writes).toEqual([{ minute: '2026-12-07T10:00', counters: { c_succeeded: 1, h_3: 1 }, expiresAtEpoch: 100 }]);
    for (let i = 0; i < 50; i++) {
      advance(100);
      await add('2026-12-07T10:00', { c_succeeded: 1, t_charge: 2_000_000 }, 100 + i);
    }
    advance(100);
    await add('2026-12-07T10:00', { c_failed: 1 });
    expect(writes).toHaveLength(1);
    advance(ROLLUP_FLUSH_MS);
    await add('2026-12-07T10:01', { c_rejected: 1 });
    expect(writes).toEqual([
      { minute: '2026-12-07T10:00', counters: { c_succeeded: 1, h_3: 1 }, expiresAtEpoch: 100 },
      { minute: '2026-12-07T10:00', counters: { c_succeeded: 50, t_charge: 100_000_000, c_failed: 1 }, expiresAtEpoch: 149 },
      { minute: '2026-12-07T10:01', counters: { c_rejected: 1 } },
    ]);
  });

  it('on Lambda, waits for the next call to write a burst (a timer would run frozen between invocations)', async () => {
    vi.useFakeTimers();
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'Api');
    const { writes, add, advance } = world();
    await add('2026-12-07T10:00', { c_succeeded: 1 });
    advance(10);
    await add('2026-12-07T10:00', { c_succeeded: 1 });
    await vi.advanceTimersByTimeAsync(ROLLUP_FLUSH_MS * 3);
    expect(writes).toHaveLength(1);
  });

  it('outside Lambda, a timer writes the last burst without waiting for another call', async () => {
    vi.useFakeTimers();
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', '');
    const { writes, add, advance } = world();
    await add('2026-12-07T10:00', { c_succeeded: 1 });
    advance(10);
    await add('2026-12-07T10:00', { c_succeeded: 1 });
    await add('2026-12-07T10:00', { c_failed: 1 });
    expect(writes).toHaveLength(1);
    advance(ROLLUP_FLUSH_MS);
    await vi.advanceTimersByTimeAsync(ROLLUP_FLUSH_MS);
    expect(writes.map((w) => w.counters)).toEqual([{ c_succeeded: 1 }, { c_succeeded: 1, c_failed: 1 }]);
  });
});
