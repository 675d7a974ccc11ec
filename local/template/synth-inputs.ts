import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';

/**
 * What a cloud assembly was made from, so template mode re-synthesizes when any of it changed: the files Node
 * loaded or read while the app synthesized (recorded by load-recorder.mjs), the files esbuild bundled into the
 * assets (their source maps' `sources`), `cdk.json`, `package.json` and the lockfile. Stored in the assembly
 * directory beside `manifest.json`.
 */
export const INPUTS_FILE = 'toolrunner-inputs.json';

/** Read at synthesis whether or not they exist: a lockfile that appears later changes the app too. */
const PROJECT_FILES = [
  'cdk.json',
  'cdk.context.json',
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
];

/** The programs whose Node processes the recorder can be imported into. */
const RECORDABLE = new Set(['node', 'tsx', 'ts-node', 'ts-node-esm']);

const FileState = z.object({ size: z.number(), mtimeMs: z.number(), sha256: z.string() }).nullable();
const Inputs = z.object({
  command: z.string(),
  /** manifest.json as the synthesis left it: another writer of the assembly (`cdk synth`) changes it. */
  manifest: z.object({ size: z.number(), mtimeMs: z.number() }),
  /** By path relative to the app's root; null: absent when the app synthesized. */
  files: z.record(z.string(), FileState),
});
type FileState = z.infer<typeof FileState>;

/** The recorder module, shipped beside this code (the build copies it next to the chunk holding it). */
export const LOAD_RECORDER = fileURLToPath(new URL('./load-recorder.mjs', import.meta.url));

/**
 * Whether the files of the app command's process can be recorded: its program (after `npx`) is `node`,
 * `tsx` or `ts-node`, which run with the recorder imported through NODE_OPTIONS.
 */
export function recordable(command: string): boolean {
  const words = command.trim().split(/\s+/);
  let i = 0;
  while (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i] ?? '')) i++;
  if (['npx', 'bunx', 'pnpx'].includes(words[i] ?? '')) i++;
  while ((words[i] ?? '').startsWith('-')) i++;
  return RECORDABLE.has(basename(words[i] ?? ''));
}

/** NODE_OPTIONS that import the recorder into the app's Node processes, after the caller's own. */
export function recorderNodeOptions(existing: string | undefined): string {
  return [existing, `--import=${pathToFileURL(LOAD_RECORDER).href}`].filter(Boolean).join(' ');
}

/** Files the synthesis reads that are the machine's or CDK's own cache, not the app: the CDK's asset fingerprints, certificates. */
function machineFile(path: string): boolean {
  return /^\/(etc|proc|sys|dev)\//.test(path) || path.includes(`${sep}.cdk${sep}cache${sep}`) || path === join(homedir(), '.gitconfig');
}

function stateOf(path: string): FileState {
  try {
    const info = statSync(path);
    if (!info.isFile()) return null;
    return { size: info.size, mtimeMs: info.mtimeMs, sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
  } catch {
    return null;
  }
}

/** The files esbuild read for each bundled asset of the assembly in `outDir`, from the bundles' source maps. */
function bundlerInputs(outDir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(outDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith('asset.')) continue;
    const dir = join(outDir, entry.name);
    for (const file of readdirSync(dir)) {
      if (!file.endsWith('.map')) continue;
      try {
        const map = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { sources?: string[]; sourceRoot?: string };
        for (const source of map.sources ?? []) found.push(resolve(dir, map.sourceRoot ?? '', source));
      } catch {
        // Not a source map we can read: its inputs are unknown, the loaded files still count.
      }
    }
  }
  return found;
}

/**
 * Writes the record of what the assembly in `outDir` (just synthesized by `command` from `root`) was made
 * from: `loadedList` is the recorder's output (one path a line), `outDir`'s own files excluded.
 */
export function recordInputs(root: string, outDir: string, command: string, loadedList: string, finalOutDir: string): void {
  const paths = new Set<string>();
  for (const line of loadedList.split('\n')) {
    const path = line.trim();
    if (path) paths.add(isAbsolute(path) ? path : resolve(root, path));
  }
  for (const path of bundlerInputs(outDir)) paths.add(path);
  const files: Record<string, FileState> = {};
  const inside = (dir: string, path: string) => !relative(dir, path).startsWith('..') && !isAbsolute(relative(dir, path));
  for (const path of paths) {
    if (inside(outDir, path) || inside(finalOutDir, path) || path === LOAD_RECORDER || machineFile(path)) continue;
    const state = stateOf(path);
    if (state) files[relative(root, path)] = state;
  }
  for (const file of PROJECT_FILES) files[file] = stateOf(join(root, file));
  const manifest = statSync(join(outDir, 'manifest.json'));
  const record: z.infer<typeof Inputs> = { command, manifest: { size: manifest.size, mtimeMs: manifest.mtimeMs }, files };
  writeFileSync(join(outDir, INPUTS_FILE), `${JSON.stringify(record)}\n`);
}

/**
 * Why the assembly in `outDir` must be synthesized again, or undefined when it is current: it is missing, it
 * has no record of its inputs (written by another command, or by an app whose files cannot be recorded), the
 * app command changed, or a file it was made from changed (size and time first, then content).
 */
export function staleReason(root: string, outDir: string, command: string): string | undefined {
  const manifestPath = join(outDir, 'manifest.json');
  if (!existsSync(manifestPath)) return 'no cloud assembly yet';
  const recordPath = join(outDir, INPUTS_FILE);
  if (!existsSync(recordPath)) return `${relative(root, outDir) || outDir} has no record of the files its synthesis read`;
  let record: z.infer<typeof Inputs>;
  try {
    record = Inputs.parse(JSON.parse(readFileSync(recordPath, 'utf8')));
  } catch {
    return `${INPUTS_FILE} is unreadable`;
  }
  const manifest = statSync(manifestPath);
  if (manifest.size !== record.manifest.size || manifest.mtimeMs !== record.manifest.mtimeMs)
    return 'the assembly was written by another command since';
  if (record.command !== command) return "cdk.json's app command changed";
  for (const [file, was] of Object.entries(record.files)) {
    const path = resolve(root, file);
    if (was === null) {
      if (existsSync(path)) return `${file} appeared`;
      continue;
    }
    let info: ReturnType<typeof statSync>;
    try {
      info = statSync(path);
    } catch {
      return `${file} is gone`;
    }
    if (info.size === was.size && info.mtimeMs === was.mtimeMs) continue;
    if (info.size !== was.size || createHash('sha256').update(readFileSync(path)).digest('hex') !== was.sha256) return `${file} changed`;
  }
  return undefined;
}
