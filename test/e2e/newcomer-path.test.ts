import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { describeWithChromium, launchChromium, screenshot, screenshotDir } from '../support/browser';
import { quickStart } from '../support/readme';
import { handlerMode } from '../support/target';

/**
 * A newcomer's path, README only: the quick start's own tool module and agent, then its "Ask a person first"
 * step: `approval: 'always'` on save_note, the runner started again, the call approved in the console by the
 * approver key from the config file, and the agent printing the envelope. The CLI runs from this clone's
 * sources (tsx resolves `toolrunner` through tsconfig.json), as `npm start` does; the packed tarball's
 * path is test/package/installed-package.test.ts.
 */
const root = resolve(import.meta.dirname, '../..');
const work = join(root, 'test-results', `newcomer-${process.pid}`);
const cli = join(root, 'cli/main.ts');
const children: ChildProcess[] = [];
let browser: Browser;

/** A process in its own group, its output kept, with a deadline-bound wait for a line. */
function background(args: string[], env: Record<string, string>, cwd = root) {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd, env: { ...process.env, ...env }, detached: true });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return {
    child,
    output: () => out,
    async waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = out.match(pattern);
        if (match) return match;
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} before ${pattern}: ${out}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    exited: () => new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code)))),
  };
}

beforeAll(() => mkdirSync(work, { recursive: true }));
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
  await browser?.close();
  rmSync(work, { recursive: true, force: true });
});

describeWithChromium('a newcomer’s path, README only', () => {
  it.runIf(handlerMode === 'source')(
    'takes the quick start’s own tool to a call a person approves in the console',
    async () => {
      const { tools, agent, text } = quickStart();
      const readme = readFileSync(join(root, 'README.md'), 'utf8');
      expect(readme).toContain("Set `approval: 'always'` on `save_note` in `tools.ts`");
      expect(text).toContain('npx toolrunner start --tools tools.ts');
      // The README's step: save_note (not get_note) asks a person.
      const at = tools.indexOf("name: 'save_note'");
      const changed = `${tools.slice(0, at)}${tools.slice(at).replace("approval: 'never'", "approval: 'always'")}`;
      expect(changed).not.toBe(tools);
      writeFileSync(join(work, 'tools.ts'), changed);
      writeFileSync(join(work, 'agent.mjs'), agent);

      const notesPort = await freePort();
      const notes = background([cli, 'notes-api'], { NOTES_PORT: String(notesPort) });
      await notes.waitFor(/notes api: (\S+)/, 30_000);
      const port = await freePort();
      const configPath = join(work, 'toolrunner.local.json');
      const runner = background([cli, 'start', '--tools', join(work, 'tools.ts')], {
        PORT: String(port),
        TOOLRUNNER_DATA_DIR: join(work, 'data'),
        TOOLRUNNER_CONFIG: configPath,
        NOTES_API: `http://127.0.0.1:${notesPort}`,
        TOOLRUNNER_HANDLERS: 'source',
      });
      const [, apiUrl] = await runner.waitFor(/ready: api=(\S+)/, 120_000);
      const { principals } = JSON.parse(readFileSync(configPath, 'utf8')) as { principals: { key: string; roles: string[] }[] };
      const keyOf = (role: string) => principals.find((p) => p.roles.length === 1 && p.roles[0] === role)!.key;

      const agentRun = background(['agent.mjs'], { TOOLRUNNER_KEY: keyOf('agent'), TOOLRUNNER_URL: apiUrl }, work);
      const [, runId] = await agentRun.waitFor(/run (run_\S+)/, 60_000);

      browser = await launchChromium();
      const page = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
      await page.goto(`${apiUrl}/console/login`);
      await page.locator('input[name=key]').fill(keyOf('approver'));
      await page.locator('button[type=submit]').click();
      await page.waitForLoadState();
      // The call exists before the agent's wait ends: it is listed once the runner asked for approval.
      const deadline = Date.now() + 60_000;
      while ((await page.locator('article[data-operation-id]').count()) === 0) {
        if (Date.now() > deadline) throw new Error(`no approval listed: ${await page.locator('body').innerText()}`);
        await new Promise((r) => setTimeout(r, 250));
        await page.goto(`${apiUrl}/console/approvals`);
      }
      const card = page.locator('article[data-operation-id]').first();
      expect(await card.innerText()).toContain('save_note');
      await screenshot(screenshotDir('newcomer-path'), page, '01-approval');
      await card.locator('button[name=decision][value=approve]').click();
      await page.waitForLoadState();
      expect(await page.locator('.banner.done').innerText()).toMatch(/^Approved op_/);

      expect(await agentRun.exited()).toBe(0);
      expect(agentRun.output()).toContain("status: 'succeeded'");
      const writes = (await (await fetch(`http://127.0.0.1:${notesPort}/_notes/writes`)).json()) as { id: string }[];
      expect(writes.map((w) => w.id)).toEqual(['n1']);
      const trace = await promisify(execFile)(process.execPath, ['--import', 'tsx', cli, 'trace', runId], {
        cwd: root,
        env: { ...process.env, TOOLRUNNER_URL: apiUrl, TOOLRUNNER_KEY: keyOf('agent') },
      });
      expect(trace.stdout).toMatch(/approv/i);
      expect(trace.stdout).toContain('approver');
    },
    300_000,
  );
});
