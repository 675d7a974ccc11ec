import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testPolicies } from '../../cli/policy';

/**
 * `toolrunner policy test` from a config file alone: the example of docs/policies.md (examples/policies/, its
 * principals written without keys), with no TOOLRUNNER_CONFIG and no `toolrunner start` before it.
 */
const root = resolve(import.meta.dirname, '../..');

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const { TOOLRUNNER_CONFIG: _config, NODE_OPTIONS: _options, VITEST: _vitest, ...inherited } = process.env;
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'cli/main.ts', ...args],
      { cwd: root, env: { ...inherited, ...env } },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('toolrunner policy test from a config file alone', () => {
  it('runs the example cases with --config, without TOOLRUNNER_CONFIG or keys', async () => {
    const run = await cli(['policy', 'test', '--config', 'examples/policies/config.json', '--cases', 'examples/policies/cases.json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'ok   #3 charge_card by billing-bot: deny — this principal may not call charge_card: forbidden by "never-over-2000"',
    );
    expect(run.stdout).toContain('ok   #6 charge_card by support-bot: deny');
    expect(run.stdout).toContain('7 of 7 cases as expected');
  }, 60_000);

  it('says which case is not as expected, and what is missing when no config is named', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'policy-cases-'));
    writeFileSync(
      join(dir, 'wrong.json'),
      JSON.stringify([
        { principal: 'support-bot', tool: 'charge_card', input: { amount: 100, currency: 'USD', customer: 'c' }, expect: 'allow' },
      ]),
    );
    const lines: string[] = [];
    const io = { out: (line: string) => lines.push(line), configPath: join(root, 'examples/policies/config.json'), tools: undefined };
    expect(testPolicies(io, join(dir, 'wrong.json'))).toBe(false);
    expect(lines.join('')).toContain('FAIL #1 charge_card by support-bot: deny (expected allow)');
    const missing = await cli(['policy', 'test', '--cases', 'examples/policies/cases.json']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('--config PATH');
  }, 60_000);
});
