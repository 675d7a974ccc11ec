import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { ModelRead, ResumeInput } from './adapter-cases';

const root = resolve(import.meta.dirname, '../..');

/**
 * Resumes a saved Agents SDK run in a new Node process (the same binary and SDK versions as this one), from
 * nothing but the saved string and the run's id: what its model read.
 */
export function resumeInNewProcess(input: ResumeInput): Promise<ModelRead> {
  const newest = process.env.TOOLRUNNER_SDKS === 'newest' ? ['--import', './test/support/newest-sdks.mjs'] : [];
  const { NODE_OPTIONS: _options, VITEST: _vitest, ...env } = process.env;
  const child = spawn(process.execPath, [...newest, '--import', 'tsx', 'test/support/resume-agents-process.ts'], {
    cwd: root,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  child.stdin.end(JSON.stringify(input));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code !== 0) return fail(new Error(`the resuming process exited ${code}: ${err.slice(-2000)}`));
      const { read, agentsModule } = JSON.parse(out) as { read: ModelRead; agentsModule: string };
      const expected = newest.length ? '/openai-agents-newest/' : '/@openai/agents/';
      if (!agentsModule.includes(expected)) return fail(new Error(`the resuming process loaded ${agentsModule}, not ${expected}`));
      done(read);
    });
  });
}
