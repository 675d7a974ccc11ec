import { describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../../functions/core/backoff';
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
