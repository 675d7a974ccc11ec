import { describe, expect, it } from 'vitest';
import { awsFaultsFromEnv } from '../../local/template/aws-faults';

describe('TOOLRUNNER_AWS_FAULTS', () => {
  it('is none by default: never delivers twice, throttles, delays a cold start or serves a late read', () => {
    const faults = awsFaultsFromEnv({});
    expect([...faults.enabled]).toEqual([]);
    faults.deliverAgain('x', async () => undefined);
    expect(Array.from({ length: 100 }, () => faults.throttles()).some(Boolean)).toBe(false);
    expect(faults.coldStartDelayMs()).toBe(0);
    expect(faults.readLagMs()).toBe(0);
    expect(faults.counts).toEqual({ duplicatesDelivered: 0, throttled: 0, coldStarts: 0, staleReads: 0 });
  });

  it('refuses an unknown fault by name', () => {
    expect(() => awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'duplicate-delivery,gremlins' })).toThrow(/each of duplicate-delivery/);
  });

  it('duplicate-delivery delivers again within 2 s, counted', async () => {
    const faults = awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: ' duplicate-delivery ', TOOLRUNNER_AWS_FAULTS_SEED: '42' });
    expect(faults.seed).toBe(42);
    const delivered = new Promise<number>((resolve) => {
      const at = Date.now();
      faults.deliverAgain('a task', async () => resolve(Date.now() - at));
    });
    expect(faults.counts.duplicatesDelivered).toBe(1);
    expect(await delivered).toBeLessThan(2_500);
  });

  it('throttle refuses about one call in ten, the same ones for the same seed', () => {
    const run = () => {
      const faults = awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'throttle', TOOLRUNNER_AWS_FAULTS_SEED: '7' });
      return { refused: Array.from({ length: 2_000 }, () => faults.throttles()), counts: faults.counts };
    };
    const first = run();
    const share = first.refused.filter(Boolean).length / first.refused.length;
    expect(share).toBeGreaterThan(0.07);
    expect(share).toBeLessThan(0.13);
    expect(first.counts.throttled).toBe(first.refused.filter(Boolean).length);
    expect(run().refused).toEqual(first.refused);
  });

  it('cold-start adds 300 to 1,500 ms; eventual-reads lags reads by up to 1 s; neither shifts the other for a seed', () => {
    const both = awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'cold-start,eventual-reads', TOOLRUNNER_AWS_FAULTS_SEED: '3' });
    const alone = awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'cold-start', TOOLRUNNER_AWS_FAULTS_SEED: '3' });
    const delays = Array.from({ length: 200 }, () => both.coldStartDelayMs());
    const lags = Array.from({ length: 200 }, () => both.readLagMs());
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(300);
    expect(Math.max(...delays)).toBeLessThan(1_500);
    expect(Math.min(...lags)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...lags)).toBeLessThan(1_000);
    expect(Array.from({ length: 200 }, () => alone.coldStartDelayMs())).toEqual(delays);
    expect(alone.readLagMs()).toBe(0);
    expect(both.counts.coldStarts).toBe(200);
  });
});
