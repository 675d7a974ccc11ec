import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../functions/core/envelope';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * docs/agents.md's MCP connection examples (kept verbatim in examples/, test/unit/docs-links.test.ts holds the
 * copies equal), run as a user runs them against the runner, each showing its revision's repeated-call rule.
 */
const root = resolve(import.meta.dirname, '../..');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.stop());

/** Runs an example to its end (`node --import tsx examples/x.ts`) and returns what it printed. */
async function runExample(file: string): Promise<string> {
  const { NODE_OPTIONS: _options, VITEST: _vitest, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: root,
    env: { ...env, TOOLRUNNER_URL: stack.apiUrl, TOOLRUNNER_KEY: stack.keys.agent },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  expect(code, `${file} exited ${code}:\n${out}${err}`).toBe(0);
  return out;
}

/** The envelopes of the example's `call N: {...}` lines, in order. */
const envelopesOf = (out: string) => [...out.matchAll(/^call \d: (\{.*\})/gm)].map(([, json]) => JSON.parse(json) as Envelope);

describe('the MCP connection examples of docs/agents.md', () => {
  it('2025-11-25: the same call twice is two operations, each run once', async () => {
    const out = await runExample('examples/mcp-2025-11-25.ts');
    expect(out).toMatch(/^tools: .*get_order.*toolrunner_check_operation/m);
    const [first, second] = envelopesOf(out);
    expect(first).toMatchObject({ status: 'succeeded', result: { id: 'ord_1' } });
    expect(second).toMatchObject({ status: 'succeeded', result: { id: 'ord_1' } });
    expect(second.logical_operation_id).not.toBe(first.logical_operation_id);
    const admin = stack.api.client(stack.keys.admin);
    const [a, b] = await Promise.all([admin.getOperation(first.logical_operation_id), admin.getOperation(second.logical_operation_id)]);
    // One session, one run: both calls are in it, and each ran.
    expect(b.runId).toBe(a.runId);
    const trace = await stack.api.client(stack.keys.agent).getTrace(a.runId);
    for (const id of [a.operationId, b.operationId])
      expect(trace.filter((e) => e.type === 'attempt.started' && e.operationId === id)).toHaveLength(1);
  }, 120_000);

  it('2026-07-28: the same call twice is one operation, the second a replay', async () => {
    const out = await runExample('examples/mcp-2026-07-28.ts');
    expect(out).toMatch(/^tools: .*get_order.*toolrunner_start_run/m);
    const [first, second] = envelopesOf(out);
    expect(first).toMatchObject({ status: 'succeeded', result: { id: 'ord_1' } });
    expect(second).toEqual(first);
    const runId = out.match(/^call 2: .* run (run_\S+)$/m)?.[1];
    expect(runId).toMatch(/^run_/);
    const trace = await stack.api.client(stack.keys.agent).getTrace(runId!);
    const id = first.logical_operation_id;
    expect(trace.filter((e) => e.type === 'attempt.started' && e.operationId === id)).toHaveLength(1);
    expect(trace.filter((e) => e.type === 'operation.replayed' && e.operationId === id)).toHaveLength(1);
  }, 120_000);
});
