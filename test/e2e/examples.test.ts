import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';

const root = resolve(import.meta.dirname, '../..');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.stop());

/** Runs an example as a user would (`node --import tsx examples/x.ts`), with the SDK versions of this test project. */
function runExample(file: string) {
  const newest = process.env.TOOLRUNNER_SDKS === 'newest' ? ['--import', './test/support/newest-sdks.mjs'] : [];
  const { NODE_OPTIONS: _options, VITEST: _vitest, ...env } = process.env;
  const child = spawn(process.execPath, [...newest, '--import', 'tsx', file], {
    cwd: root,
    env: { ...env, TOOLRUNNER_URL: stack.apiUrl, TOOLRUNNER_KEY: stack.keys.agent },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  return {
    output: () => out,
    exited,
    async line(pattern: RegExp): Promise<RegExpMatchArray> {
      return stack.api.until(
        `${file} to print ${pattern}`,
        async () => out.match(pattern) ?? (child.exitCode !== null ? `exited ${child.exitCode}: ${out}${err}` : undefined),
        (m) => m !== undefined,
        120_000,
      ) as Promise<RegExpMatchArray>;
    },
  };
}

describe('the examples run with their scripted models against the runner', () => {
  it.each(['examples/ai-sdk.ts', 'examples/openai-agents.ts'])(
    '%s: pauses for a person, resumes with the runner’s decision, charges once',
    async (file) => {
      const example = runExample(file);
      const [, runId] = await example.line(/^run (run_\S+)$/m);
      const [, operationId] = await example.line(/^waiting for a person: (op_\S+)$/m);
      expect(typeof runId).toBe('string');
      // The person decides at the runner while the example waits.
      await stack.api.client(stack.keys.approver).approve(operationId);
      expect(await example.exited).toBe(0);
      // The scripted model's last words: what it read about the charge.
      expect(example.output()).toMatch(/charge_card: .*"status":"succeeded"/);
      const trace = await stack.api.client(stack.keys.agent).getTrace(runId);
      expect(trace.filter((e) => e.type === 'attempt.started' && e.operationId === operationId)).toHaveLength(1);
      // One charge under the operation's idempotency key (an admin may read the key).
      const op = await stack.api.client(stack.keys.admin).getOperation(operationId);
      const charges = (await stack.sandbox.ledger()).filter((e) => e.kind === 'charge' && e.idempotencyKey === op.idempotencyKey);
      expect(charges.map((c) => c.body)).toEqual([expect.objectContaining({ amount: 70_000, customer: 'cus_42' })]);
      expect(op.envelope?.result).toMatchObject({ id: charges[0].id });
    },
    180_000,
  );
});
