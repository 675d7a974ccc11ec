import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureAssembly } from '../../local/template/assembly';

/**
 * A CDK app without CDK: `app.mjs` writes a one-stack assembly whose template carries a value from `props.mjs`
 * (an ES module it imports), from `shared.cjs` (CommonJS it requires) and from `data.json` (read with
 * readFileSync), so each way a synthesis reads a file is seen.
 */
function fakeApp(dir: string, command = 'node app.mjs'): void {
  writeFileSync(join(dir, 'cdk.json'), JSON.stringify({ app: command }));
  writeFileSync(join(dir, 'props.mjs'), "export const greeting = 'Hello';\n");
  writeFileSync(join(dir, 'shared.cjs'), "module.exports = { size: 'small' };\n");
  writeFileSync(join(dir, 'data.json'), '{"colour":"blue"}\n');
  writeFileSync(
    join(dir, 'app.mjs'),
    [
      "import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';",
      "import { createRequire } from 'node:module';",
      "import { join } from 'node:path';",
      "import { greeting } from './props.mjs';",
      "const { size } = createRequire(import.meta.url)('./shared.cjs');",
      "const { colour } = JSON.parse(readFileSync('data.json', 'utf8'));",
      'const out = process.env.CDK_OUTDIR;',
      'mkdirSync(out, { recursive: true });',
      "const template = { Resources: { Fn: { Type: 'AWS::Lambda::Function', Properties: { Description: `${greeting} ${size} ${colour}` } } } };",
      "writeFileSync(join(out, 'App.template.json'), JSON.stringify(template));",
      "writeFileSync(join(out, 'manifest.json'), JSON.stringify({ artifacts: { App: { type: 'aws:cloudformation:stack', properties: { templateFile: 'App.template.json' } } } }));",
    ].join('\n'),
  );
}

const descriptionOf = (dir: string) =>
  (
    JSON.parse(readFileSync(join(dir, 'cdk.out/App.template.json'), 'utf8')) as {
      Resources: { Fn: { Properties: { Description: string } } };
    }
  ).Resources.Fn.Properties.Description;

describe("template mode's synthesis of the app cdk.json names", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const project = (command?: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrunner-own-app-'));
    dirs.push(dir);
    fakeApp(dir, command);
    return dir;
  };

  it('synthesizes again when a file the synthesis loaded or read changed, and only then', async () => {
    const dir = project();
    const first = await ensureAssembly({ root: dir });
    expect(first.synthesizedMs).toBeGreaterThanOrEqual(0);
    expect(descriptionOf(dir)).toBe('Hello small blue');
    expect(await ensureAssembly({ root: dir })).toEqual({ dir: join(dir, 'cdk.out') });

    // An ES module the app imports: the stale assembly is not used.
    writeFileSync(join(dir, 'props.mjs'), "export const greeting = 'Howdy';\n");
    expect((await ensureAssembly({ root: dir })).reason).toBe('props.mjs changed');
    expect(descriptionOf(dir)).toBe('Howdy small blue');

    // A CommonJS module it requires, and a file it reads.
    writeFileSync(join(dir, 'shared.cjs'), "module.exports = { size: 'large' };\n");
    expect((await ensureAssembly({ root: dir })).reason).toBe('shared.cjs changed');
    writeFileSync(join(dir, 'data.json'), '{"colour":"red"}\n');
    expect((await ensureAssembly({ root: dir })).reason).toBe('data.json changed');
    expect(descriptionOf(dir)).toBe('Howdy large red');

    // A lockfile that appears, and cdk.json itself.
    writeFileSync(join(dir, 'package-lock.json'), '{}\n');
    expect((await ensureAssembly({ root: dir })).reason).toBe('package-lock.json appeared');
    writeFileSync(join(dir, 'cdk.json'), JSON.stringify({ app: 'node app.mjs', context: { k: 1 } }));
    expect((await ensureAssembly({ root: dir })).reason).toBe('cdk.json changed');

    // A file touched with the same content is not a change.
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(dir, 'props.mjs'), later, later);
    expect(await ensureAssembly({ root: dir })).toEqual({ dir: join(dir, 'cdk.out') });
  });

  it('records the TypeScript files of an app run with tsx (the app command `toolrunner init --cdk` writes)', async () => {
    const dir = project('node --import tsx app.mjs');
    // tsx as an app's own dependency: this repo's copy.
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(import.meta.dirname, '../../node_modules/tsx'), join(dir, 'node_modules/tsx'));
    writeFileSync(join(dir, 'app.mjs'), readFileSync(join(dir, 'app.mjs'), 'utf8').replace("'./props.mjs'", "'./props.ts'"));
    writeFileSync(join(dir, 'props.ts'), "export const greeting: string = 'Hello';\n");
    await ensureAssembly({ root: dir });
    expect(descriptionOf(dir)).toBe('Hello small blue');
    expect(await ensureAssembly({ root: dir })).toEqual({ dir: join(dir, 'cdk.out') });
    writeFileSync(join(dir, 'props.ts'), "export const greeting: string = 'Hi';\n");
    expect((await ensureAssembly({ root: dir })).reason).toBe('props.ts changed');
    expect(descriptionOf(dir)).toBe('Hi small blue');
  });

  it('synthesizes at every start, and says so, when the app command does not run on node, tsx or ts-node', async () => {
    const dir = project('sh -c "node app.mjs"');
    const lines: string[] = [];
    await ensureAssembly({ root: dir, onProgress: (l) => lines.push(l) });
    const again = await ensureAssembly({ root: dir, onProgress: (l) => lines.push(l) });
    expect(again.synthesizedMs).toBeGreaterThanOrEqual(0);
    expect(lines.at(-1)).toContain(
      'does not run on node, tsx or ts-node, so the files it reads cannot be recorded: synthesizing at every start',
    );
  });

  it('names cdk.json and `toolrunner init --cdk` when the folder has no app', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrunner-no-app-'));
    dirs.push(dir);
    await expect(ensureAssembly({ root: dir })).rejects.toThrow(
      /has no cdk\.json: run it from your app's folder \(`npx toolrunner init --cdk` scaffolds one\)/,
    );
  });
});
