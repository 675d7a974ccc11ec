import { describe, expect, it } from 'vitest';
import { awsFaultsFromEnv } from '../../local/template/aws-faults';

describe('TOOLRUNNER_AWS_FAULTS', () => {
  it('is none by default, and then never delivers twice', () => {
    const faults = awsFaultsFromEnv({});
    expect([...faults.enabled]).toEqual([]);
    faults.deliverAgain('x', async () => undefined);
    expect(faults.duplicatesDelivered).toBe(0);
  });

  it('refuses an unknown fault, and names one not emulated yet instead of ignoring it', () => {
    expect(() => awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'duplicate-delivery,gremlins' })).toThrow(/each of duplicate-delivery/);
    expect(() => awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: 'throttle' })).toThrow(/throttle not emulated yet/);
  });

  it('duplicate-delivery delivers again within 2 s, counted', async () => {
    const faults = awsFaultsFromEnv({ TOOLRUNNER_AWS_FAULTS: ' duplicate-delivery ', TOOLRUNNER_AWS_FAULTS_SEED: '42' });
    expect(faults.seed).toBe(42);
    const delivered = new Promise<number>((resolve) => {
      const at = Date.now();
      faults.deliverAgain('a task', async () => resolve(Date.now() - at));
    });
    expect(faults.duplicatesDelivered).toBe(1);
    expect(await delivered).toBeLessThan(2_500);
  });
});
