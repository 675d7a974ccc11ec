import { describe, expect, it } from 'vitest';
import { EVENTS_PER_BLOCK, makeTraceClock } from '../../functions/adapters/trace-clock';

describe('trace clock', () => {
  it('numbers blocks after the floor read and after every block of this process, even when the clock steps back', () => {
    let now = Date.UTC(2026, 10, 30, 12);
    const stamps = makeTraceClock(
      () => now,
      () => 0.5,
    );
    const a = stamps.nextBlock();
    now -= 5_000;
    const b = stamps.nextBlock();
    expect(b).toBeGreaterThan(a);
    // Another process's clock may be behind; the operation's own last block is the floor.
    const behind = makeTraceClock(
      () => now - 60_000,
      () => 0,
    );
    expect(behind.nextBlock(b + 3)).toBe(b + EVENTS_PER_BLOCK);
    for (const seq of [a, b]) expect(seq % EVENTS_PER_BLOCK).toBe(0);
  });

  it('follows the clock: a later millisecond numbers later, and stays a safe integer for decades', () => {
    let now = Date.UTC(2026, 10, 30, 12);
    const stamps = makeTraceClock(
      () => now,
      () => 0.99,
    );
    const first = stamps.nextBlock();
    now += 1;
    const second = makeTraceClock(
      () => now,
      () => 0,
    ).nextBlock();
    expect(second).toBeGreaterThan(first);
    expect(
      Number.isSafeInteger(
        makeTraceClock(
          () => Date.UTC(2090, 0, 1),
          () => 0.99,
        ).nextBlock() + EVENTS_PER_BLOCK,
      ),
    ).toBe(true);
  });
});
