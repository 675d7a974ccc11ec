/**
 * What the suite needs from the machine besides `npm ci`: Java (DynamoDB Local) and Debian's Chromium.
 * In CI (`CI=true`, as `.ci/run` sets it) a missing one fails the tests that need it; elsewhere those
 * tests are skipped with a notice that says what is missing, so `npm ci && npm test` passes on a fresh
 * machine and says what it did not run.
 */
import { spawnSync } from 'node:child_process';

export const inCi = process.env.CI === 'true' || process.env.CI === '1';

/** Java 17+ on the PATH: DynamoDB Local runs on it. */
export function javaPresent(): boolean {
  return spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
}

/** The one line a skipped tier prints: what is missing, what is not run, how to get it. */
export function skipNotice(missing: string, skipped: string, install: string): string {
  return `notice: ${missing} is missing, so ${skipped} are skipped (CI=true requires it): ${install}`;
}
