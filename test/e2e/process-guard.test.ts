import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, operationIdFor } from '../../functions/client';
import { freePort } from '../../local/dynamodb-local';
import { handlerMode } from '../support/target';

/**
 * `toolrunner start` survives its tools: a tool that leaves a promise rejection unhandled, and one that throws
 * from a timer, end neither the process nor any call; the error is logged, attributed to its attempt.
 */
const root = resolve(import.meta.dirname, '../..');
const work = join(root, 'test-results', `process-guard-${process.pid}`);
let child: ChildProcess | undefined;

const TOOLS = `import { z } from 'zod';
const base = { inputSchema: z.strictObject({}), outputSchema: z.object({ ok: z.boolean() }), risk: 'read', timeoutMs: 2000, maxAttempts: 1, supportsIdempotency: true, approval: 'never' };
export default [
  { ...base, name: 'forgets_a_rejection', description: 'leaves a rejected promise nobody handles',
    execute: async () => { Promise.reject(new Error('a promise nobody awaited')); return { ok: true }; } },
  { ...base, name: 'throws_from_a_timer', description: 'throws from a timer it started',
    execute: async () => { setTimeout(() => { throw new Error('thrown from a timer'); }, 5); await new Promise((r) => setTimeout(r, 100)); return { ok: true }; } },
];
`;

afterAll(async () => {
  if (child && child.exitCode === null) {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  rmSync(work, { recursive: true, force: true });
});

describe.runIf(handlerMode === 'source')('toolrunner start and misbehaving tool code', () => {
  it('logs a stray rejection and a timer exception against their attempts, and goes on serving', async () => {
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'tools.ts'), TOOLS);
    const port = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', join(root, 'cli/main.ts'), 'start', '--tools', join(work, 'tools.ts')], {
      cwd: root,
      detached: true,
      env: {
        ...process.env,
        PORT: String(port),
        TOOLRUNNER_DATA_DIR: join(work, 'data'),
        TOOLRUNNER_CONFIG: join(work, 'config.json'),
        TOOLRUNNER_HANDLERS: 'source',
      },
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const until = async (what: string, ok: () => boolean, ms = 120_000) => {
      const deadline = Date.now() + ms;
      while (!ok()) {
        if (child!.exitCode !== null) throw new Error(`exited ${child!.exitCode} before ${what}: ${out}`);
        if (Date.now() > deadline) throw new Error(`no ${what}: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await until('ready', () => out.includes('ready: api='));
    const apiUrl = `http://127.0.0.1:${port}`;
    const { principals } = JSON.parse(readFileSync(join(work, 'config.json'), 'utf8')) as {
      principals: { key: string; roles: string[] }[];
    };
    const client = createClient({ baseUrl: apiUrl, apiKey: principals.find((p) => p.roles.includes('agent'))!.key });
    const { runId } = await client.createRun();
    for (const [turn, name] of ['forgets_a_rejection', 'throws_from_a_timer'].entries()) {
      const answer = await client.callTool(runId, { callId: `call_${name}`, turn: turn + 1, name, arguments: {} }, { waitSeconds: 20 });
      expect(answer.kind === 'envelope' && answer.envelope.status, name).toBe('succeeded');
    }
    for (const [name, message] of [
      ['forgets_a_rejection', 'an unhandled promise rejection left by tool code'],
      ['throws_from_a_timer', 'an uncaught exception left by tool code'],
    ]) {
      const operationId = operationIdFor(runId, `call_${name}`);
      await until(`the log line for ${name}`, () => out.split('\n').some((l) => l.includes(message) && l.includes(operationId)), 30_000);
    }
    expect((await fetch(`${apiUrl}/v1/health`)).status).toBe(200);
    expect(child.exitCode).toBeNull();
  }, 240_000);
});
