import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';

/** What the synthesized app is made from: a change to any of these makes `cdk.out` stale. */
export const APP_SOURCES = ['infra', 'functions', 'statemachines', 'package-lock.json', 'cdk.json'] as const;

/** A CloudFormation template as synthesized: only the parts template mode reads are typed. */
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  [key: string]: unknown;
}
export interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  [key: string]: unknown;
}

/** One stack of a cloud assembly, with the files its assets were built into. */
export interface StackAssembly {
  /** The assembly directory (`cdk.out`). */
  dir: string;
  stackName: string;
  template: CfnTemplate;
  /** The stack's environment as synthesized; `undefined` where the app left it to deploy time. */
  account?: string;
  region?: string;
  /** The local path of the file asset uploaded under this S3 object key (a Lambda's bundle, a state machine's definition). */
  assetPath(objectKey: string): string | undefined;
}

const Manifest = z.object({
  artifacts: z.record(
    z.string(),
    z.object({
      type: z.string(),
      environment: z.string().optional(),
      properties: z
        .object({ templateFile: z.string().optional(), file: z.string().optional(), stackName: z.string().optional() })
        .passthrough()
        .optional(),
      dependencies: z.array(z.string()).optional(),
    }),
  ),
});
const AssetManifest = z.object({
  files: z
    .record(
      z.string(),
      z.object({
        source: z.object({ path: z.string().optional() }),
        destinations: z.record(z.string(), z.object({ objectKey: z.string() })),
      }),
    )
    .default({}),
});
const Template = z.object({ Resources: z.record(z.string(), z.object({ Type: z.string() }).passthrough()) }).passthrough();

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** The assembly exists and is newer than every source of the app. */
export function assemblyIsCurrent(root: string, outDir: string): boolean {
  const manifest = join(outDir, 'manifest.json');
  if (!existsSync(manifest)) return false;
  const built = statSync(manifest).mtimeMs;
  return APP_SOURCES.every((source) => newestMtime(join(root, source)) <= built);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs the app command of `cdk.json` the way the CDK CLI does (CDK_OUTDIR and the context of cdk.json), without
 * the CLI itself: no AWS account or region is looked up, no notices are fetched, so nothing leaves the machine.
 * The assembly is the same one `cdk synth` writes (esbuild bundles, cdk-nag applied: a finding fails it).
 */
function runApp(root: string, outDir: string): Promise<void> {
  const cdkJson = z
    .object({ app: z.string(), context: z.record(z.string(), z.unknown()).default({}) })
    .parse(JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')));
  return new Promise((resolvePromise, reject) => {
    let output = '';
    const child = spawn('/bin/sh', ['-c', cdkJson.app], {
      cwd: root,
      env: { ...process.env, CDK_OUTDIR: outDir, CDK_CONTEXT_JSON: JSON.stringify(cdkJson.context) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-8000)));
    child.stderr.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-8000)));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolvePromise() : reject(new Error(`synthesizing the CDK app failed (exit ${code}):\n${output.trim()}`)),
    );
  });
}

/**
 * `cdk.out` synthesized from the repo's CDK app, synthesizing first when it is missing or older than the app's
 * sources. Concurrent callers (test workers, a second `npm start`) take turns through a lock directory: one
 * synthesizes into a fresh directory and swaps it in, the others wait for it and reuse the result.
 */
export async function ensureAssembly(
  options: { root?: string; outDir?: string; onProgress?(line: string): void; timeoutMs?: number } = {},
): Promise<{ dir: string; synthesizedMs?: number }> {
  const root = resolve(options.root ?? '.');
  const outDir = resolve(options.outDir ?? join(root, 'cdk.out'));
  if (!existsSync(join(root, 'cdk.json')))
    throw new Error(`template mode needs the CDK app of the repository (no cdk.json in ${root}); run it from the repo's root`);
  const lock = `${outDir}.lock`;
  const deadline = Date.now() + (options.timeoutMs ?? 15 * 60_000);
  for (;;) {
    if (assemblyIsCurrent(root, outDir)) return { dir: outDir };
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
    } catch {
      // Someone else synthesizes; a lock left by a process that died is taken over.
      const holder = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
      if (holder && !pidAlive(holder)) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for another synthesis of the CDK app (lock ${lock})`);
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      if (assemblyIsCurrent(root, outDir)) return { dir: outDir };
      options.onProgress?.('synthesizing the CDK app into cdk.out (bundles and cdk-nag; tens of seconds)…');
      const started = Date.now();
      const fresh = `${outDir}.building-${process.pid}`;
      rmSync(fresh, { recursive: true, force: true });
      await runApp(root, fresh);
      rmSync(outDir, { recursive: true, force: true });
      renameSync(fresh, outDir);
      return { dir: outDir, synthesizedMs: Date.now() - started };
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** `aws://123456789012/eu-west-1` → its parts; `unknown-*` (left to deploy time) → undefined. */
function environmentOf(env: string | undefined): { account?: string; region?: string } {
  const [, account, region] = /^aws:\/\/([^/]+)\/(.+)$/.exec(env ?? '') ?? [];
  return {
    account: account && !account.startsWith('unknown-') ? account : undefined,
    region: region && !region.startsWith('unknown-') ? region : undefined,
  };
}

/** Reads the one stack of the cloud assembly in `dir`, its template and its file assets. */
export function readAssembly(dir: string): StackAssembly {
  const read = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
  const manifest = Manifest.parse(read('manifest.json'));
  const stacks = Object.entries(manifest.artifacts).filter(([, a]) => a.type === 'aws:cloudformation:stack');
  if (stacks.length !== 1)
    throw new Error(`template mode runs one stack; the assembly in ${dir} has ${stacks.length}: ${stacks.map(([id]) => id).join(', ')}`);
  const [id, stack] = stacks[0];
  if (!stack.properties?.templateFile) throw new Error(`stack ${id} has no template file`);
  const template = Template.parse(read(stack.properties.templateFile)) as CfnTemplate;
  const assets = new Map<string, string>();
  for (const dependency of stack.dependencies ?? []) {
    const artifact = manifest.artifacts[dependency];
    if (artifact?.type !== 'cdk:asset-manifest' || !artifact.properties?.file) continue;
    const files = AssetManifest.parse(read(artifact.properties.file)).files;
    for (const file of Object.values(files)) {
      if (!file.source.path) continue;
      for (const destination of Object.values(file.destinations)) assets.set(destination.objectKey, join(dir, file.source.path));
    }
  }
  return {
    dir,
    stackName: stack.properties.stackName ?? id,
    template,
    ...environmentOf(stack.environment),
    assetPath: (objectKey) => assets.get(objectKey),
  };
}
