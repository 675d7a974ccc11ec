import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');

/** `toolrunner/testing` and `toolrunner verify` from the packed tarball, in a project outside the repo. */
describe.runIf(process.env.TOOLRUNNER_PACKAGE_TEST === '1')('the packed package: toolrunner/testing and verify', () => {
  const work = mkdtempSync(join(tmpdir(), 'toolrunner-testing-'));
  const app = join(work, 'app');

  beforeAll(async () => {
    const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[];
    await run('mkdir', ['-p', app]);
    await run('npm', ['init', '-y'], { cwd: app });
    await run('npm', ['pkg', 'set', 'type=module'], { cwd: app });
    await run('npm', ['install', join(work, info.filename), 'zod', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
    });
  }, 480_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('runs a call through createTestRunner with a scripted fault', async () => {
    writeFileSync(
      join(app, 'check.mjs'),
      [
        "import { createServer } from 'node:http';",
        "import { z } from 'zod';",
        "import { defineTool, requestJson } from 'toolrunner';",
        "import { createTestRunner } from 'toolrunner/testing';",
        'const keys = new Set();',
        'const server = createServer((req, res) => { keys.add(req.headers["idempotency-key"]); req.resume(); res.setHeader("content-type", "application/json"); res.end(JSON.stringify({ id: "n1" })); });',
        "await new Promise((r) => server.listen(0, '127.0.0.1', r));",
        'const url = `http://127.0.0.1:${server.address().port}/notes/n1`;',
        'const tool = defineTool({ name: "save", description: "d", inputSchema: z.strictObject({ text: z.string() }), outputSchema: z.object({ id: z.string() }),',
        '  risk: "reversible_write", timeoutMs: 1000, maxAttempts: 3, supportsIdempotency: true, approval: "never",',
        '  execute: (ctx, input) => requestJson(ctx, { method: "PUT", url, body: input, headers: { "Idempotency-Key": ctx.idempotencyKey } }) });',
        "const runner = createTestRunner({ tools: [tool], faults: { call_1: ['response_lost'] } });",
        "const { envelope, requests } = await runner.call('save', { text: 'hi' }, { callId: 'call_1' });",
        'console.log(JSON.stringify({ status: envelope.status, requests: requests.length, keys: keys.size }));',
        'server.close();',
      ].join('\n'),
    );
    const out = await run(process.execPath, ['check.mjs'], { cwd: app });
    expect(JSON.parse(out.stdout.trim())).toEqual({ status: 'succeeded', requests: 2, keys: 1 });
  });

  it('`toolrunner verify` fails the shipped example whose upstream ignores the idempotency key', async () => {
    const failed = await run(
      join(app, 'node_modules/.bin/toolrunner'),
      ['verify', '--tools', 'node_modules/toolrunner/examples/forgetful-upstream.ts'],
      {
        cwd: app,
      },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('create_invoice under response_lost (case one invoice): the upstream ignores the idempotency key');
  });
});
