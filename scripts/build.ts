import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';

/**
 * `npm run build`: the package's JavaScript and declarations in dist/.
 * JavaScript: esbuild bundles each entry (dependencies stay external, so the user's zod is the runner's zod)
 * into ESM that plain Node loads; shared code goes into common chunks, so `toolrunner` and the CLI share one
 * copy of the tool-spec and error modules. Declarations: tsc, then relative specifiers get the `.js` that
 * Node's ESM resolution (and TypeScript's node16/nodenext) expects.
 */
const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const dist = join(root, 'dist');

const entries: Record<string, string> = {
  index: 'functions/index.ts',
  'client/index': 'functions/client/index.ts',
  cli: 'cli/main.ts',
};
// The construct comes with the CDK work (infra/tool-runner.ts); until then the package has no `toolrunner/cdk` code.
if (existsSync(join(root, 'infra/tool-runner.ts'))) entries['cdk/index'] = 'functions/cdk/index.ts';
else console.warn('build: infra/tool-runner.ts is missing, so dist/cdk (toolrunner/cdk) is not built');

rmSync(dist, { recursive: true, force: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: entries,
  outdir: dist,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  keepNames: true,
  metafile: true,
  logLevel: 'warning',
});

// statemachines/definition.ts reads the ASL next to itself (import.meta.url): put a copy beside each output holding it.
for (const [output, meta] of Object.entries(result.metafile.outputs)) {
  if (Object.keys(meta.inputs).some((input) => input.endsWith('statemachines/definition.ts'))) {
    copyFileSync(join(root, 'statemachines/invocation.asl.json'), join(root, dirname(output), 'invocation.asl.json'));
  }
}
chmodSync(join(dist, 'cli.js'), 0o755);

const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
if (!config) throw new Error('build: cannot read tsconfig.json');
const typesDir = join(dist, 'types');
const program = ts.createProgram(
  Object.values(entries).filter((e) => e !== 'cli/main.ts').map((e) => join(root, e)),
  { ...config.options, noEmit: false, declaration: true, emitDeclarationOnly: true, outDir: typesDir, rootDir: root },
);
const emitted = program.emit(undefined, undefined, undefined, true);
const errors = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter((d) => d.category === ts.DiagnosticCategory.Error);
if (errors.length) {
  console.error(ts.formatDiagnostics(errors, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' }));
  process.exit(1);
}
for (const file of walk(typesDir)) {
  if (!file.endsWith('.d.ts')) continue;
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\2/g, (match, lead: string, quote: string, spec: string) => {
    const target = resolve(dirname(file), spec);
    if (existsSync(`${target}.d.ts`)) return `${lead}${quote}${spec}.js${quote}`;
    if (existsSync(join(target, 'index.d.ts'))) return `${lead}${quote}${spec}/index.js${quote}`;
    return match;
  });
  if (fixed !== text) writeFileSync(file, fixed);
}

const size = walk(dist).reduce((sum, f) => sum + statSync(f).size, 0);
console.log(`build: ${Object.keys(entries).join(', ')} → ${relative(root, dist)}/ (${Math.round(size / 1024)} KiB)`);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}
