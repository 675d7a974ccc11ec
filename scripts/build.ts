import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { FUNCTIONS } from '../infra/functions';

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
  'testing/index': 'functions/testing/index.ts',
  cli: 'cli/main.ts',
  'cdk/index': 'functions/cdk/index.ts',
  'openai-agents': 'functions/agents/openai-agents.ts',
  'ai-sdk': 'functions/agents/ai-sdk.ts',
};
// The Lambda entries the construct bundles in the user's app (infra/bundling.ts runnerFile finds them at
// dist/functions/handlers/*.js); `toolrunner-user-tools` stays a bare import, aliased to the user's module then.
for (const spec of Object.values(FUNCTIONS)) entries[`functions/handlers/${spec.entry}`] = `functions/handlers/${spec.entry}.ts`;
// The signing key's seed (infra/signing-key.ts), a custom resource's function rather than a runner function.
entries['functions/handlers/seed-signing-key'] = 'functions/handlers/seed-signing-key.ts';
// The empty tools module every isolated function but Tools is bundled with (infra/bundling.ts toolsEntryFor).
entries['functions/handlers/no-user-tools'] = 'functions/handlers/no-user-tools.ts';

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

// Modules that read files next to themselves (import.meta.url): put a copy beside each output holding them.
const besideItself: Record<string, string[]> = {
  'statemachines/definition.ts': ['statemachines/invocation.asl.json', 'statemachines/invocation-express.asl.json'],
  'local/dynamodb-local.ts': ['local/LoopbackDynamoDbLocal.java'],
  // Imported (--import) into the user's CDK app while template mode synthesizes it.
  'local/template/synth-inputs.ts': ['local/template/load-recorder.mjs'],
};
for (const [output, meta] of Object.entries(result.metafile.outputs)) {
  for (const [module, files] of Object.entries(besideItself)) {
    if (!Object.keys(meta.inputs).some((input) => input.endsWith(module))) continue;
    for (const file of files) copyFileSync(join(root, file), join(root, dirname(output), basename(file)));
  }
}
chmodSync(join(dist, 'cli.js'), 0o755);

const config = ts.getParsedCommandLineOfConfigFile(
  join(root, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
);
if (!config) throw new Error('build: cannot read tsconfig.json');
const typesDir = join(dist, 'types');
const program = ts.createProgram(
  Object.values(entries)
    .filter((e) => e !== 'cli/main.ts' && !e.startsWith('functions/handlers/'))
    .map((e) => join(root, e)),
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
