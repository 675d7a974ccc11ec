import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { recordable, recordInputs, recorderNodeOptions, staleReason } from './synth-inputs';

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

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const CdkJson = z.object({ app: z.string(), context: z.record(z.string(), z.unknown()).default({}) });

/** The app command and context of the `cdk.json` in `root`. */
function readCdkJson(root: string): z.infer<typeof CdkJson> {
  const path = join(root, 'cdk.json');
  let parsed: z.infer<typeof CdkJson>;
  try {
    parsed = CdkJson.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    throw new Error(`${path}: ${error instanceof z.ZodError ? 'needs an "app" command' : (error as Error).message}`);
  }
  return parsed;
}

/**
 * Runs the app command of `cdk.json` the way the CDK CLI does (CDK_OUTDIR and the context of cdk.json), without
 * the CLI itself: no AWS account or region is looked up, no notices are fetched, so nothing leaves the machine.
 * The assembly is the same one `cdk synth` writes (esbuild bundles, cdk-nag applied: a finding fails it). On
 * `node`, `tsx` or `ts-node` the recorder is imported into it, writing the files it loads to `loadedFile`.
 */
function runApp(root: string, outDir: string, app: z.infer<typeof CdkJson>, loadedFile?: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    let output = '';
    const child = spawn('/bin/sh', ['-c', app.app], {
      cwd: root,
      env: {
        ...process.env,
        CDK_OUTDIR: outDir,
        CDK_CONTEXT_JSON: JSON.stringify(app.context),
        ...(loadedFile ? { NODE_OPTIONS: recorderNodeOptions(process.env.NODE_OPTIONS), TOOLRUNNER_LOADED_FILES: loadedFile } : {}),
      },
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
 * `cdk.out` synthesized from the CDK app that `cdk.json` in `root` (default: the current directory) names,
 * synthesizing first when it is missing or a file its last synthesis read has changed (see synth-inputs.ts);
 * an app command whose files cannot be recorded is synthesized at every call, and the progress line says so.
 * Concurrent callers (test workers, a second start) take turns through a lock directory: one synthesizes into
 * a fresh directory and swaps it in, the others wait for it and reuse the result.
 */
export async function ensureAssembly(
  options: { root?: string; outDir?: string; onProgress?(line: string): void; timeoutMs?: number } = {},
): Promise<{ dir: string; synthesizedMs?: number; reason?: string }> {
  const root = resolve(options.root ?? '.');
  const outDir = resolve(options.outDir ?? join(root, 'cdk.out'));
  if (!existsSync(join(root, 'cdk.json')))
    throw new Error(
      `template mode runs the CDK app that cdk.json names, and ${root} has no cdk.json: run it from your app's folder (\`npx toolrunner init --cdk\` scaffolds one)`,
    );
  const app = readCdkJson(root);
  const records = recordable(app.app);
  const lock = `${outDir}.lock`;
  const deadline = Date.now() + (options.timeoutMs ?? 15 * 60_000);
  let waited = false;
  for (;;) {
    let reason = records ? staleReason(root, outDir, app.app) : undefined;
    // Another caller just synthesized an app whose files cannot be recorded: that assembly is this call's too.
    if (!records && !(waited && existsSync(join(outDir, 'manifest.json'))))
      reason = `cdk.json's app command (${app.app}) does not run on node, tsx or ts-node, so the files it reads cannot be recorded: synthesizing at every start`;
    if (!reason) return { dir: outDir };
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
    } catch {
      // Someone else synthesizes; a lock left by a process that died is taken over.
      const holder = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
      if (holder && !pidAlive(holder)) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for another synthesis of the CDK app (lock ${lock})`);
      waited = true;
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    const fresh = `${outDir}.building-${process.pid}`;
    const loadedFile = `${fresh}.loaded`;
    try {
      if (records) {
        reason = staleReason(root, outDir, app.app);
        if (!reason) return { dir: outDir };
      }
      options.onProgress?.(`synthesizing the CDK app into ${relative(root, outDir) || outDir} (${reason}; bundles: tens of seconds)…`);
      const started = Date.now();
      rmSync(fresh, { recursive: true, force: true });
      rmSync(loadedFile, { force: true });
      if (records) writeFileSync(loadedFile, '');
      await runApp(root, fresh, app, records ? loadedFile : undefined);
      if (records) recordInputs(root, fresh, app.app, readFileSync(loadedFile, 'utf8'), outDir);
      rmSync(outDir, { recursive: true, force: true });
      renameSync(fresh, outDir);
      return { dir: outDir, synthesizedMs: Date.now() - started, reason };
    } finally {
      rmSync(loadedFile, { force: true });
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
