import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startNotesApi } from '../../cli/notes-api';
import { freePort } from '../../local/dynamodb-local';

const root = resolve(import.meta.dirname, '../..');
/** tsx's loader by absolute URL: the CLI runs in a folder outside the repo, where `--import tsx` would not resolve. */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const dir = mkdtempSync(join(tmpdir(), 'toolrunner-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The CLI from its sources, as `node --import tsx cli/main.ts`; the built one is tested from the installed package. */
function cli(args: string[], env: Record<string, string> = {}, cwd = dir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((r) => {
    execFile(
      process.execPath,
      ['--import', tsxLoader, join(root, 'cli/main.ts'), ...args],
      { cwd, env: { ...process.env, TOOLRUNNER_TOOLS: '', ...env } },
      (error, stdout, stderr) => r({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);

describe('toolrunner command', () => {
  it('refuses a tools module whose policy could repeat a side effect, naming the tool, before starting anything', async () => {
    writeFileSync(
      join(dir, 'risky.mjs'),
      `export default [{ name: 'wire_money', description: 'x', inputSchema: { _zod: { def: { type: 'object' } }, safeParse() {} }, outputSchema: { _zod: { def: { type: 'unknown' } }, safeParse() {} },
        risk: 'irreversible_write', timeoutMs: 1000, maxAttempts: 3, supportsIdempotency: false, approval: 'never', execute: async () => ({}) }];`,
    );
    const res = await cli(['start', '--tools', 'risky.mjs']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(
      'wire_money: an irreversible write without idempotency support or a reconcile function must declare maxAttempts: 1',
    );
    expect(res.stdout).not.toContain('ready:');
    noStack(res.stderr);
  });

  it('says what is wrong with a missing module or one without an array default export', async () => {
    const missing = await cli(['start'], { TOOLRUNNER_TOOLS: 'nope.ts' });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no tools module at .*nope\.ts/);
    writeFileSync(join(dir, 'single.mjs'), 'export default { name: "x" };');
    const single = await cli(['start', '--tools', 'single.mjs']);
    expect(single).toMatchObject({ code: 2 });
    expect(single.stderr).toContain('the default export must be a non-empty array of tool specs');
    noStack(`${missing.stderr}${single.stderr}`);
  });

  it('prints usage for an unknown command and asks trace for its key', async () => {
    const unknown = await cli(['deploy']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('toolrunner start [--tools PATH]');
    const trace = await cli(['trace', 'run_1'], { TOOLRUNNER_KEY: '' });
    expect(trace.code).toBe(2);
    expect(trace.stderr).toContain('TOOLRUNNER_KEY');
  });

  it('prints its version and each command’s help with exit 0, and refuses unknown flags with exit 2', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(await cli(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` });
    for (const command of ['start', 'trace', 'notes-api', 'approvals', 'approve', 'reject', 'runs']) {
      const help = await cli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`usage: toolrunner ${command}`);
    }
    expect((await cli(['--help'])).stdout).toContain('toolrunner <command> --help');
    const unknownFlag = await cli(['start', '--tool', 'x.ts']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain("Unknown option '--tool'");
    expect(unknownFlag.stderr).toContain('usage: toolrunner start');
    const noRun = await cli(['trace'], { TOOLRUNNER_KEY: 'k' });
    expect(noRun.code).toBe(2);
    expect(noRun.stderr).toContain('usage: toolrunner trace RUN_ID');
    noStack(`${unknownFlag.stderr}${noRun.stderr}`);
  });

  it('names the host, the port and the cause when the API cannot be reached, and never a secret in its URL', async () => {
    const port = await freePort();
    const refused = await cli(['trace', 'run_1'], { TOOLRUNNER_URL: `http://127.0.0.1:${port}`, TOOLRUNNER_KEY: 'k' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`GET http://127.0.0.1:${port}/v1/runs/run_1/trace (127.0.0.1:${port}): connect ECONNREFUSED`);
    const secret = await cli(['trace', 'run_1'], {
      TOOLRUNNER_URL: `http://me:hunter2@127.0.0.1:${port}/?token=hunter3`,
      TOOLRUNNER_KEY: 'k',
    });
    expect(secret.code).toBe(1);
    expect(secret.stderr).toContain(`127.0.0.1:${port}`);
    expect(secret.stderr).not.toMatch(/hunter2|hunter3/);
    noStack(`${refused.stderr}${secret.stderr}`);
  });

  it('hashes a config document’s keys for a deployed secret, from a file or standard input', async () => {
    const file = join(dir, 'principals.json');
    writeFileSync(file, JSON.stringify({ principals: [{ id: 'a', key: 'tr_0123456789abcdefgh', roles: ['agent'], tools: '*' }] }));
    const hashed = await cli(['keys', 'hash', file]);
    expect(hashed.code).toBe(0);
    expect(JSON.parse(hashed.stdout).principals[0]).toEqual({
      id: 'a',
      roles: ['agent'],
      tools: '*',
      keySha256: '482d21773343ae6be716cb3233b5d9bc4c92e86c280e0b8cede3467e0acc8402',
    });
    expect(hashed.stdout).not.toContain('tr_0123456789abcdefgh');
    expect((await cli(['keys', '--help'])).stdout).toContain('usage: toolrunner keys hash');
    expect((await cli(['keys', '--help'])).stdout).toContain('toolrunner keys show PRINCIPAL');
    expect((await cli(['keys', 'hash', join(dir, 'missing.json')])).code).toBe(1);
    expect((await cli(['keys'])).code).toBe(2);
  });

  it('tests policies against cases (exit 1 on a mismatch, naming it) and prints their schema', async () => {
    writeFileSync(
      join(dir, 'policies.cedar'),
      [
        '@id("calls") permit(principal, action in Action::"call", resource);',
        '@id("charges-unattended-to-200") permit(principal, action == Action::"charge_card:unattended", resource) when { context.input.amount <= 20000 };',
        '@id("never-over-2000") forbid(principal, action == Action::"charge_card", resource) when { context.input.amount > 200000 };',
      ].join('\n'),
    );
    const config = join(dir, 'policy-config.json');
    writeFileSync(
      config,
      JSON.stringify({
        principals: [{ id: 'bot', key: 'bot-key-0123456789abcdef', roles: ['agent'], tools: '*' }],
        policiesFile: 'policies.cedar',
      }),
    );
    const charge = (amount: number, expect: string) => ({
      principal: 'bot',
      tool: 'charge_card',
      input: { amount, currency: 'USD', customer: 'c' },
      expect,
    });
    writeFileSync(
      join(dir, 'good.json'),
      JSON.stringify([charge(100, 'allow'), charge(30_000, 'require_approval'), charge(300_000, 'deny')]),
    );
    const good = await cli(['policy', 'test', '--cases', 'good.json'], { TOOLRUNNER_CONFIG: config });
    expect(good.code).toBe(0);
    expect(good.stdout).toContain(
      'ok   #3 charge_card by bot: deny — this principal may not call charge_card: forbidden by "never-over-2000"',
    );
    expect(good.stdout).toContain('3 of 3 cases as expected');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify([charge(300_000, 'allow')]));
    const bad = await cli(['policy', 'test', '--cases', 'bad.json'], { TOOLRUNNER_CONFIG: config });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('FAIL #1 charge_card by bot: deny (expected allow)');
    // A policy that names a field the tool does not take: refused with its line, before any case.
    writeFileSync(
      join(dir, 'policies.cedar'),
      '@id("calls") permit(principal, action in Action::"call", resource);\n@id("typo") forbid(principal, action == Action::"charge_card", resource) when { context.input.amout > 1 };',
    );
    const invalid = await cli(['policy', 'test', '--cases', 'good.json'], { TOOLRUNNER_CONFIG: config });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/the policies do not load:\npolicies\.cedar:2: .*amout/);
    const usage = await cli(['policy', 'test'], { TOOLRUNNER_CONFIG: config });
    expect(usage.code).toBe(2);
    const schema = await cli(['policy', 'schema']);
    expect(schema.code).toBe(0);
    expect(schema.stdout).toContain('action "charge_card:unattended" in [Action::"call_unattended"]');
    noStack(`${good.stderr}${bad.stderr}${invalid.stderr}${usage.stderr}${schema.stderr}`);
  }, 60_000);

  it('serves the quick start’s notes API: reads, writes deduplicated on Idempotency-Key, clear refusals', async () => {
    const api = await startNotesApi(0);
    try {
      const put = (id: string, body: string, key?: string) =>
        fetch(`${api.url}/notes/${id}`, { method: 'PUT', body, headers: key ? { 'idempotency-key': key } : {} });
      expect(await (await fetch(`${api.url}/notes/n1`)).json()).toEqual({ id: 'n1', text: 'first' });
      expect((await put('n2', JSON.stringify({ text: 'a' }), 'k1')).status).toBe(200);
      // The same key again answers the stored note and writes nothing, even with another body.
      expect(await (await put('n2', JSON.stringify({ text: 'b' }), 'k1')).json()).toEqual({ id: 'n2', text: 'a' });
      const writes = (await (await fetch(`${api.url}/_notes/writes`)).json()) as { id: string; idempotencyKey?: string }[];
      expect(writes.map((w) => [w.id, w.idempotencyKey])).toEqual([['n2', 'k1']]);
      expect((await put('n3', 'not json')).status).toBe(400);
      expect((await put('n3', JSON.stringify({ text: 1 }))).status).toBe(400);
      expect((await fetch(`${api.url}/notes/n9`)).status).toBe(404);
      expect((await fetch(`${api.url}/notes/UPPER`)).status).toBe(404);
      expect((await fetch(`${api.url}/other`)).status).toBe(404);
    } finally {
      api.server.close();
    }
  });

  it('init scaffolds tools.ts, agent.mjs, .gitignore and package.json; --cdk adds app.ts, cdk.json and the CDK dependencies', async () => {
    const plain = mkdtempSync(join(dir, 'plain-'));
    const res = await cli(['init'], {}, plain);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toContain('init: wrote tools.ts, agent.mjs, package.json, .gitignore');
    expect(readdirSync(plain).sort()).toEqual(['.gitignore', 'agent.mjs', 'package.json', 'tools.ts']);
    expect(readFileSync(join(plain, '.gitignore'), 'utf8').split('\n')).toEqual(
      expect.arrayContaining(['toolrunner.local.json', '.local/']),
    );
    const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      version: string;
      devDependencies: Record<string, string>;
    };
    expect(JSON.parse(readFileSync(join(plain, 'package.json'), 'utf8'))).toMatchObject({
      type: 'module',
      scripts: { start: 'toolrunner start --tools tools.ts', agent: 'node agent.mjs' },
      dependencies: { toolrunner: `^${own.version}`, zod: own.devDependencies.zod },
    });
    // The scaffolded tools module is one `toolrunner start --tools` accepts (loaded through the same checks).
    const { loadTools } = await import('../../cli/load-tools');
    const zod = createRequire(join(root, 'package.json')).resolve('zod');
    writeFileSync(
      join(plain, 'tools-check.ts'),
      readFileSync(join(plain, 'tools.ts'), 'utf8')
        .replace("from 'toolrunner'", `from '${join(root, 'functions/index.ts')}'`)
        .replace("from 'zod'", `from '${zod}'`),
    );
    expect((await loadTools(join(plain, 'tools-check.ts'))).map((t) => t.name)).toEqual(['greet']);

    // --cdk in a folder where `npm install toolrunner` already made package.json and a .gitignore exists.
    const cdk = mkdtempSync(join(dir, 'cdk-'));
    writeFileSync(
      join(cdk, 'package.json'),
      JSON.stringify({ name: 'mine', scripts: { start: 'node mine.js' }, dependencies: { toolrunner: 'file:../t.tgz' } }),
    );
    writeFileSync(join(cdk, '.gitignore'), 'dist/');
    const withCdk = await cli(['init', '--cdk'], {}, cdk);
    expect(withCdk).toMatchObject({ code: 0, stderr: '' });
    expect(withCdk.stdout).toContain('init: wrote tools.ts, agent.mjs, app.ts, cdk.json; added to package.json, .gitignore');
    expect(withCdk.stdout).toContain('npx toolrunner node-runtime 24');
    expect(withCdk.stdout).toContain('npx toolrunner start --template');
    expect(JSON.parse(readFileSync(join(cdk, 'cdk.json'), 'utf8'))).toEqual({ app: 'node --import tsx app.ts' });
    expect(readFileSync(join(cdk, 'app.ts'), 'utf8')).toContain("tools: { entry: 'tools.ts', environment: { GREETING: 'Hello' } }");
    const pkg = JSON.parse(readFileSync(join(cdk, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    expect(pkg.scripts).toEqual({ start: 'node mine.js', synth: 'cdk synth', deploy: 'cdk deploy', agent: 'node agent.mjs' });
    expect(pkg.dependencies).toEqual({
      toolrunner: 'file:../t.tgz',
      zod: own.devDependencies.zod,
      'aws-cdk-lib': own.devDependencies['aws-cdk-lib'],
      constructs: own.devDependencies.constructs,
    });
    expect(pkg.devDependencies).toEqual({
      'aws-cdk': own.devDependencies['aws-cdk'],
      esbuild: own.devDependencies.esbuild,
      tsx: expect.stringMatching(/^\^4\./),
      '@cloud-copilot/iam-simulate': own.devDependencies['@cloud-copilot/iam-simulate'],
    });
    expect(readFileSync(join(cdk, '.gitignore'), 'utf8')).toBe(
      'dist/\nnode_modules/\ntoolrunner.local.json\n.local/\ncdk.out/\ncdk.out.*\n',
    );
  });

  it('init writes nothing over existing files: exit 2 naming them', async () => {
    const taken = mkdtempSync(join(dir, 'taken-'));
    writeFileSync(join(taken, 'tools.ts'), 'mine');
    writeFileSync(join(taken, 'cdk.json'), '{}');
    const res = await cli(['init', '--cdk'], {}, taken);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('toolrunner: init: init writes nothing over existing files: tools.ts, cdk.json');
    expect(readdirSync(taken).sort()).toEqual(['cdk.json', 'tools.ts']);
    expect(readFileSync(join(taken, 'tools.ts'), 'utf8')).toBe('mine');
    noStack(res.stderr);
  });

  it('start --template takes the tools of the CDK app, and says so to --tools; node-runtime needs a major', async () => {
    const both = await cli(['start', '--template', '--tools', 'tools.ts']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain(
      "template mode runs the tools your CDK app's ToolRunner construct bundles (its tools.entry), not --tools",
    );
    expect(both.stderr).not.toMatch(/repositor/);
    const runtime = await cli(['node-runtime']);
    expect(runtime.code).toBe(2);
    expect(runtime.stderr).toContain('node-runtime needs one Node.js major, e.g. 24');
    const help = await cli(['--help']);
    expect(help.stdout).toMatch(/toolrunner init \[--cdk\]/);
    expect(help.stdout).toMatch(/toolrunner node-runtime MAJOR/);
  });
});
