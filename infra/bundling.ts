import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';
import type { BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';

/**
 * How every Lambda is bundled: the one definition the `ToolRunner` construct deploys with, and the one the
 * embedded stack (`TOOLRUNNER_HANDLERS=bundled`, `TARGET=bundled`) and the bundle tests build with.
 * Plain data, no CDK import, so `npm start` can read it without loading aws-cdk-lib.
 */
export const LAMBDA_BUNDLING = {
  format: 'esm',
  /** The default Lambda runtime's Node.js major (NODEJS_24_X); the bundle targets it. */
  target: 'node24',
  minify: true,
  // Class and function names survive minification: a thrown error's name is what ErrorEquals matches.
  keepNames: true,
  sourceMap: true,
  mainFields: ['module', 'main'],
  // The AWS SDK is bundled rather than taken from the runtime, so the SDK tested is the SDK deployed.
  externalModules: [] as string[],
  // Some CommonJS dependencies call require(); an ESM bundle has none of its own.
  banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
  // CommonJS dependencies that read a file beside themselves (the Cedar engine's .wasm) find it beside the bundle.
  define: { __dirname: 'import.meta.dirname' },
} as const;

/**
 * Files every bundle needs beside it: the Cedar engine's WebAssembly module, which its loader reads from its
 * own folder (`__dirname`, the bundle's folder once bundled). Loaded only where policies are configured.
 */
export function filesBesideBundle(): string[] {
  const loader = createRequire(import.meta.url).resolve('@cedar-policy/cedar-wasm/nodejs');
  return [join(dirname(loader), 'cedar_wasm_bg.wasm')];
}

/** The file name the construct's `policiesFile` gets beside each bundle (TOOLRUNNER_POLICIES_FILE names it). */
export const BUNDLED_POLICIES_FILE = 'policies.cedar';

/** The bare import under which the tools-running Lambda entries import the user's tools module. */
export const USER_TOOLS_MODULE = 'toolrunner-user-tools';

/**
 * The tools module one function's bundle gets: with tool isolation only `Tools` loads the user's module (and its
 * dependencies); every other function, which holds the runner's keys, gets an empty one and asks `Tools` instead.
 */
export function toolsEntryFor(name: string, toolsEntry: string, isolated: boolean): string {
  return isolated && name !== 'Tools' ? runnerFile('functions/handlers/no-user-tools') : toolsEntry;
}

/** The bundling every Lambda of the construct shares (the runner's functions and the signing key's seed). */
export function baseBundling(target: string = LAMBDA_BUNDLING.target): BundlingOptions {
  const b = LAMBDA_BUNDLING;
  return {
    format: b.format as OutputFormat,
    target,
    minify: b.minify,
    keepNames: b.keepNames,
    sourceMap: b.sourceMap,
    mainFields: [...b.mainFields],
    externalModules: [...b.externalModules],
    banner: b.banner,
  };
}

/** The `NodejsFunction` bundling props for one Lambda whose entry may import the user's tools. */
export function cdkBundling(toolsEntry: string, target: string = LAMBDA_BUNDLING.target, policiesFile?: string): BundlingOptions {
  const b = LAMBDA_BUNDLING;
  const copies = [
    ...filesBesideBundle().map((file) => ({ from: file, to: basename(file) })),
    ...(policiesFile ? [{ from: policiesFile, to: BUNDLED_POLICIES_FILE }] : []),
  ];
  return {
    ...baseBundling(target),
    define: { ...b.define },
    esbuildArgs: { '--alias': `${USER_TOOLS_MODULE}=${toolsEntry}` },
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (_input: string, output: string) =>
        copies.map(({ from, to }) => `cp ${JSON.stringify(from)} ${JSON.stringify(join(output, to))}`),
    },
  };
}

/**
 * The same bundle through esbuild's JS API: the flags aws-lambda-nodejs passes to the esbuild CLI
 * (`--bundle --platform=node --target --format --minify --sourcemap --keep-names --banner:js
 * --main-fields --alias`), so a bundle built here is byte for byte the deployed one.
 */
export function esbuildOptions(entry: string, outfile: string, toolsEntry: string | undefined): BuildOptions {
  const b = LAMBDA_BUNDLING;
  return {
    entryPoints: [entry],
    bundle: true,
    outfile,
    platform: 'node',
    target: b.target,
    format: b.format,
    minify: b.minify,
    keepNames: b.keepNames,
    sourcemap: b.sourceMap,
    mainFields: [...b.mainFields],
    external: [...b.externalModules],
    banner: { js: b.banner },
    define: { ...b.define },
    // A function that loads no tools module (the signing key's seed) has no alias.
    ...(toolsEntry ? { alias: { [USER_TOOLS_MODULE]: toolsEntry } } : {}),
    logLevel: 'warning',
  };
}

/** A runner source file by its path from the repository root: `.ts` in the repo, `.js` once compiled. */
export function runnerFile(pathFromRoot: string): string {
  const base = fileURLToPath(new URL(`../${pathFromRoot}`, import.meta.url));
  for (const candidate of [`${base}.ts`, `${base}.js`]) if (existsSync(candidate)) return candidate;
  throw new Error(`toolrunner: ${pathFromRoot} not found next to ${fileURLToPath(import.meta.url)}`);
}

/** The demo tools as a tools module (default export), for the repo's own stacks. */
export const DEMO_TOOLS_ENTRY = () => runnerFile('functions/tools/demo-entry');
