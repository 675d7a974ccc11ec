import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';
import { DEMO_TOOLS_ENTRY, esbuildOptions, filesBesideBundle, LAMBDA_BUNDLING, runnerFile } from '../infra/bundling';
import { FUNCTIONS, type FunctionName } from '../infra/functions';

/** Where bundles are cached between runs (beside other tools' caches, ignored by git). */
export const DEFAULT_BUNDLE_CACHE = resolve('node_modules/.cache/toolrunner/bundles');

interface BuildRecord {
  /** The build's directory name under the function's cache directory. */
  build: string;
  /** Every file esbuild read, with the size and mtime it had: any change means a rebuild. */
  inputs: Record<string, [number, number]>;
}

const signature = (file: string): [number, number] | undefined => {
  try {
    const s = statSync(file);
    return [s.size, Math.trunc(s.mtimeMs)];
  } catch {
    return undefined;
  }
};

function current(record: BuildRecord | undefined): boolean {
  return (
    !!record &&
    Object.entries(record.inputs).every(([file, sig]) => {
      const now = signature(file);
      return now !== undefined && now[0] === sig[0] && now[1] === sig[1];
    })
  );
}

/**
 * The deployed bundle of one Lambda: built with the construct's esbuild options (infra/bundling.ts) from
 * the same entry and tools module, reused while none of its inputs changed. Concurrent builders (test
 * workers) each write their own directory and swap a small record file in with an atomic rename.
 */
export async function lambdaBundle(name: FunctionName, options: { toolsEntry?: string; cacheDir?: string } = {}): Promise<string> {
  const toolsEntry = resolve(options.toolsEntry ?? DEMO_TOOLS_ENTRY());
  const key = createHash('sha256').update(JSON.stringify({ LAMBDA_BUNDLING, esbuildVersion, toolsEntry })).digest('hex').slice(0, 16);
  const dir = join(options.cacheDir ?? DEFAULT_BUNDLE_CACHE, key, name);
  const recordFile = join(dir, 'current.json');
  const record = existsSync(recordFile) ? (JSON.parse(readFileSync(recordFile, 'utf8')) as BuildRecord) : undefined;
  if (record && current(record)) return join(dir, record.build, 'index.mjs');

  const buildName = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const outfile = join(dir, buildName, 'index.mjs');
  mkdirSync(join(dir, buildName), { recursive: true });
  const result = await build({
    ...esbuildOptions(runnerFile(`functions/handlers/${FUNCTIONS[name].entry}`), outfile, toolsEntry),
    metafile: true,
    logLevel: 'error',
  });
  for (const file of filesBesideBundle()) copyFileSync(file, join(dir, buildName, basename(file)));
  const inputs = Object.fromEntries(Object.keys(result.metafile.inputs).map((f) => [resolve(f), signature(resolve(f))!]));
  const next: BuildRecord = { build: buildName, inputs };
  const temp = `${recordFile}.${buildName}`;
  writeFileSync(temp, JSON.stringify(next));
  renameSync(temp, recordFile);
  return outfile;
}

/**
 * Imports a bundle as a fresh module instance (`instance` makes its URL unique), through Node's own
 * `import()`: a tiny loader module in the cache directory does the import, because test runners rewrite
 * `import()` in the sources they load and would push each 1 MB bundle through their transform pipeline
 * (vitest: seconds per bundle); modules under node_modules they leave to Node.
 */
export async function importBundle(file: string, instance: string, cacheDir = DEFAULT_BUNDLE_CACHE): Promise<Record<string, unknown>> {
  const loader = join(cacheDir, 'native-import.mjs');
  const source = 'export const load = (url) => import(url);\n';
  if (!existsSync(loader) || readFileSync(loader, 'utf8') !== source) {
    mkdirSync(cacheDir, { recursive: true });
    const temp = `${loader}.${process.pid}`;
    writeFileSync(temp, source);
    renameSync(temp, loader);
  }
  const { load } = (await import(pathToFileURL(loader).href)) as { load: (url: string) => Promise<Record<string, unknown>> };
  return load(`${pathToFileURL(file).href}?instance=${instance}`);
}
