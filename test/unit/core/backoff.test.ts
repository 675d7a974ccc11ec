import { describe, expect, it } from 'vitest';
import { backoffSeconds, LOCK_WAIT_SECONDS, lockWaitSeconds } from '../../../functions/core/backoff';
import { EXPRESS_MAX_WAIT_SECONDS, EXPRESS_TIMEOUT_SECONDS } from '../../../statemachines/express';
import { seeded } from '../../support/seeded';

const policy = { baseSeconds: 1, capSeconds: 20 };

describe('capped exponential backoff with full jitter', () => {
  it('draws from [0, min(cap, base * 2^(n-2))]', () => {
    expect(backoffSeconds(2, policy, () => 0.999)).toBe(1);
    expect(backoffSeconds(3, policy, () => 0.999)).toBe(2);
    expect(backoffSeconds(5, policy, () => 0.999)).toBe(8);
    expect(backoffSeconds(12, policy, () => 0.999)).toBe(20);
    expect(backoffSeconds(12, policy, () => 0)).toBe(0);
  });

  it('spreads retries across the whole window (full jitter)', () => {
    const random = seeded(1);
    const draws = Array.from({ length: 2000 }, () => backoffSeconds(6, policy, random));
    expect(Math.min(...draws)).toBe(0);
    expect(Math.max(...draws)).toBe(16);
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(mean).toBeGreaterThan(7);
    expect(mean).toBeLessThan(9);
  });

  it('treats Retry-After as a floor, even above the cap', () => {
    expect(backoffSeconds(2, policy, () => 0, 3)).toBe(3);
    expect(backoffSeconds(2, policy, () => 0.999, 0.2)).toBe(1);
    expect(backoffSeconds(2, policy, () => 0, 45)).toBe(45);
  });
});

describe('the lock wait’s backoff', () => {
  /** When each look happens, from the first look that found the lock held (t = 0), for `looks` looks. */
  const looksAt = (looks: number) => {
    const at = [0];
    for (let waits = 0; at.length < looks; waits++) at.push(at[at.length - 1] + lockWaitSeconds(waits));
    return at;
  };

  it('looks again quickly once, then at most 3 times in any 60 s: ≤ 3 invocations and ≤ 9 transitions a minute', () => {
    expect(lockWaitSeconds(0)).toBe(2);
    const at = looksAt(200);
    for (const start of at) {
      const inWindow = at.filter((t) => t >= start && t < start + 60).length;
      expect(inWindow, `window from ${start} s`).toBeLessThanOrEqual(3);
      // Execute, Route and Backoff per look on the Standard machine.
      expect(inWindow * 3).toBeLessThanOrEqual(10);
    }
  });

  it('stays on Express for waits it can run (≤ 60 s each, within its 5 minutes), then hands off to Standard', () => {
    const onExpress = [0, 1, 2, 3].map(lockWaitSeconds).filter((s) => s <= EXPRESS_MAX_WAIT_SECONDS);
    expect(onExpress).toEqual([...LOCK_WAIT_SECONDS]);
    expect(onExpress.reduce((a, b) => a + b, 0)).toBeLessThan(EXPRESS_TIMEOUT_SECONDS - 60);
    expect(lockWaitSeconds(3)).toBeGreaterThan(EXPRESS_MAX_WAIT_SECONDS);
  });
});
