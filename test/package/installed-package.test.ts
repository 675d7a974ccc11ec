import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { isEmbedded } from '../support/target';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');

/** The notes upstream the fixture's tools call: a read, and a write that deduplicates on Idempotency-Key. */
function startNotesUpstream(): Promise<{ url: string; puts: { key: string | undefined; id: string }[]; server: Server }> {
  const notes = new Map<string, { id: string; text: string }>([['n1', { id: 'n1', text: 'first' }]]);
  const byKey = new Map<string, { id: string; text: string }>();
  const puts: { key: string | undefined; id: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = decodeURIComponent((req.url ?? '').replace(/^\/notes\//, ''));
      const reply = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method === 'GET') return notes.has(id) ? reply(200, notes.get(id)) : reply(404, { error: { code: 'not_found' } });
      if (req.method !== 'PUT') return reply(405, {});
      const key = req.headers['idempotency-key'] as string | undefined;
      if (key && byKey.has(key)) return reply(200, byKey.get(key));
      puts.push({ key, id });
      const note = { id, text: (JSON.parse(Buffer.concat(chunks).toString()) as { text: string }).text };
      notes.set(id, note);
      if (key) byKey.set(key, note);
      reply(200, note);
    });
  });
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () => r({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, puts, server })),
  );
}

/** Lines of a child's stdout, with a way to wait (deadline-bound) for one that matches. */
function watchLines(child: ChildProcess) {
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return {
    output: () => `${out}${err}`,
    async waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = out.match(pattern);
        if (match) return match;
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} before ${pattern}: ${out}${err}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms: ${out}${err}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

function exitOf(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r, reject) => {
    const timer = setTimeout(() => reject(new Error('no exit in time')), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      r(code);
    });
  });
}

/** Plain node: no loader or options inherited from the test runner. */
function plainEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _options, VITEST: _vitest, ...env } = process.env;
  return { ...env, ...extra };
}

describe.runIf(isEmbedded)('the packed package, installed outside the repo', () => {
  const work = mkdtempSync(join(tmpdir(), 'toolrunner-user-'));
  const app = join(work, 'app');
  let tarball = '';
  let runner: ChildProcess | undefined;
  let upstream: Awaited<ReturnType<typeof startNotesUpstream>>;
  const figures: Record<string, string> = {};

  beforeAll(async () => {
    let started = Date.now();
    const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
      filename: string;
      size: number;
      unpackedSize: number;
      entryCount: number;
    }[];
    tarball = join(work, info.filename);
    figures.pack = `${((Date.now() - started) / 1000).toFixed(1)} s, ${(statSync(tarball).size / 1024).toFixed(0)} KiB, ${info.entryCount} files`;

    rmSync(app, { recursive: true, force: true });
    await run('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'notes-agent', private: true, type: 'module' }));
    started = Date.now();
    await run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
    });
    figures.install = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    const du = await run('du', ['-sk', join(app, 'node_modules')]);
    figures.installSize = `${Math.round(Number(du.stdout.split('\t')[0]) / 1024)} MiB`;
    copyFileSync(join(root, 'test/package/fixtures/notes-tools.ts'), join(app, 'tools.ts'));
    upstream = await startNotesUpstream();
  }, 240_000);

  afterAll(async () => {
    if (runner && runner.exitCode === null) {
      runner.kill('SIGKILL');
      await exitOf(runner, 10_000).catch(() => undefined);
    }
    upstream?.server.close();
    console.log(`package figures: ${JSON.stringify(figures)}`);
    rmSync(work, { recursive: true, force: true });
  });

  it('gives TypeScript users working declarations under node16 resolution (the quick start typechecks)', async () => {
    writeFileSync(
      join(app, 'agent.ts'),
      [
        "import { createClient, ToolRunnerError, type ToolCallResult } from 'toolrunner/client';",
        "import type { Envelope, ToolSpec } from 'toolrunner';",
        "import tools from './tools.js';",
        'const specs: ToolSpec[] = tools;',
        "const runner = createClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: process.env.TOOLRUNNER_KEY ?? '' });",
        'const { runId } = await runner.createRun({ budgets: { maxToolCalls: 20 } });',
        "const answer: ToolCallResult = await runner.callTool(runId, { callId: 'call_1', turn: 1, name: 'save_note', arguments: { id: 'n1', text: 'hello' } });",
        "const envelope: Envelope = answer.kind === 'envelope' ? answer.envelope : await runner.waitForOperation(answer.operationId);",
        '// @ts-expect-error: a status the API never answers',
        "const wrong: Envelope['status'] = 'done';",
        'export { envelope, specs, wrong, ToolRunnerError };',
      ].join('\n'),
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [join(root, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['tools.ts', 'agent.ts'],
      }),
    );
    const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app }).catch(
      (e: { stdout: string }) => ({ stdout: e.stdout, failed: true }),
    );
    expect(tsc.stdout).toBe('');
  }, 120_000);

  it('exports the framework adapters by their package names (their frameworks are optional peers)', async () => {
    const resolved = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "console.log(JSON.stringify(['openai-agents', 'ai-sdk'].map((name) => import.meta.resolve(`toolrunner/${name}`))))",
      ],
      { cwd: app },
    );
    const [agents, aiSdk] = JSON.parse(resolved.stdout) as string[];
    expect(agents).toMatch(/node_modules\/toolrunner\/dist\/openai-agents\.js$/);
    expect(aiSdk).toMatch(/node_modules\/toolrunner\/dist\/ai-sdk\.js$/);
    for (const file of [agents, aiSdk]) expect(existsSync(new URL(file))).toBe(true);
  });

  it('runs the user’s tools with `toolrunner start --tools`, serves them through the typed client, and stops on SIGTERM', async () => {
    const [port, sandboxPort] = [await freePort(), await freePort()];
    let started = Date.now();
    runner = spawn(join(app, 'node_modules/.bin/toolrunner'), ['start', '--tools', 'tools.ts'], {
      cwd: app,
      env: plainEnv({
        PORT: String(port),
        SANDBOX_PORT: String(sandboxPort),
        TOOLRUNNER_DATA_DIR: join(work, 'data'),
        TOOLRUNNER_CONFIG: join(work, 'principals.json'),
        NOTES_API: upstream.url,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = watchLines(runner);
    const [, apiUrl] = await lines.waitFor(/ready: api=(\S+)/, 90_000);
    figures.startToReady = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    expect(apiUrl).toBe(`http://127.0.0.1:${port}`);
    expect(lines.output()).toContain('tools: get_note, save_note');
    expect(lines.output()).not.toContain('sandbox=');
    await expect(fetch(`http://127.0.0.1:${sandboxPort}/health`)).rejects.toThrow();

    const principals = JSON.parse(readFileSync(join(work, 'principals.json'), 'utf8')) as {
      principals: { key: string; roles: string[] }[];
    };
    const apiKey = principals.principals.find((p) => p.roles.includes('agent'))!.key;
    // The client as the user's code loads it: from the installed package, with the installed zod.
    const { createClient, ToolRunnerError } = (await import(
      pathToFileURL(join(app, 'node_modules/toolrunner/dist/client/index.js')).href
    )) as typeof import('../../functions/client');
    const client = createClient({ baseUrl: apiUrl, apiKey });

    expect((await client.listTools()).map((t) => t.name)).toEqual(['get_note', 'save_note']);
    const { runId } = await client.createRun({ budgets: { maxToolCalls: 10 } });

    const read = await client.callTool(
      runId,
      { callId: 'call_1', turn: 1, name: 'get_note', arguments: { id: 'n1' } },
      { waitSeconds: 20 },
    );
    expect(read).toMatchObject({
      kind: 'envelope',
      replayed: false,
      envelope: { status: 'succeeded', result: { id: 'n1', text: 'first' } },
    });

    const write = { callId: 'call_2', turn: 2, name: 'save_note', arguments: { id: 'n2', text: 'second' } };
    const first = await client.callTool(runId, write, { waitSeconds: 20 });
    expect(first).toMatchObject({
      kind: 'envelope',
      replayed: false,
      envelope: { status: 'succeeded', result: { id: 'n2', text: 'second' } },
    });
    const again = await client.callTool(runId, write, { waitSeconds: 20 });
    expect(again).toMatchObject({ kind: 'envelope', replayed: true });
    if (first.kind !== 'envelope' || again.kind !== 'envelope') throw new Error('expected envelopes');
    expect(again.envelope.logical_operation_id).toBe(first.envelope.logical_operation_id);
    expect(upstream.puts).toHaveLength(1);
    expect(upstream.puts[0].key).toMatch(/.{16,}/);

    const conflict = await client.callTool(runId, { ...write, arguments: { id: 'n2', text: 'changed' } }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ToolRunnerError);
    expect(conflict).toMatchObject({ status: 409, code: 'call_id_conflict' });
    expect(upstream.puts).toHaveLength(1);

    // The CLI's timeline for the same run, from the installed bin.
    const trace = await run(join(app, 'node_modules/.bin/toolrunner'), ['trace', runId], {
      cwd: app,
      env: plainEnv({ TOOLRUNNER_URL: apiUrl, TOOLRUNNER_KEY: apiKey }),
    });
    expect(trace.stdout).toMatch(new RegExp(`^run ${runId}: \\d+ events, 2 operations`));
    expect(trace.stdout).toContain('save_note  call call_2 turn 2');
    expect(trace.stdout).toMatch(/#1\s+attempt finished succeeded HTTP 200/);

    started = Date.now();
    runner.kill('SIGTERM');
    expect(await exitOf(runner, 30_000)).toBe(0);
    figures.stop = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    expect(lines.output()).not.toMatch(/\n\s+at /);
  }, 180_000);

  it("synthesizes a user CDK app with the installed ToolRunner construct, bundling the user's tools into the Lambdas that run them", async () => {
    // The construct's peers, as a user adds them: CDK itself, and esbuild so bundling needs no Docker.
    let started = Date.now();
    await run(
      'npm',
      ['install', 'aws-cdk-lib', 'constructs', 'esbuild', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: app, maxBuffer: 64 * 1024 * 1024 },
    );
    figures.cdkPeersInstall = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    writeFileSync(
      join(app, 'cdk-app.mjs'),
      [
        "import { App, Stack } from 'aws-cdk-lib';",
        "import { ToolRunner } from 'toolrunner/cdk';",
        "const app = new App({ outdir: 'cdk.out' });",
        "const runner = new ToolRunner(new Stack(app, 'NotesAgent'), 'Runner', { tools: { entry: 'tools.ts', environment: { NOTES_API: 'https://notes.example.com' } } });",
        'app.synth();',
        'console.log(runner.node.path);',
      ].join('\n'),
    );
    started = Date.now();
    await run(process.execPath, ['cdk-app.mjs'], { cwd: app, env: plainEnv({}), maxBuffer: 64 * 1024 * 1024 });
    figures.cdkSynth = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    const template = JSON.parse(readFileSync(join(app, 'cdk.out/NotesAgent.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: any }>;
    };
    const machines = Object.values(template.Resources).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(machines.map((m) => m.Properties.StateMachineType).sort()).toEqual(['EXPRESS', 'STANDARD']);
    const functions = Object.entries(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler',
    );
    const bundleOf = (name: string) => {
      const [, fn] = functions.find(([id]) => id.startsWith(`Runner${name}Function`))!;
      return readFileSync(join(app, 'cdk.out', `asset.${fn.Properties.Code.S3Key.replace(/\.zip$/, '')}`, 'index.mjs'), 'utf8');
    };
    // The user's tools are in the Lambdas that run them, and not in the others.
    expect(bundleOf('Execute')).toContain('save_note');
    expect(bundleOf('Api')).toContain('save_note');
    expect(bundleOf('Sweeper')).not.toContain('save_note');
    const execute = functions.find(([id]) => id.startsWith('RunnerExecuteFunction'))![1];
    expect(execute.Properties.Environment.Variables.NOTES_API).toBe('https://notes.example.com');
  }, 240_000);
});
