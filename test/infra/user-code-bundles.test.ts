import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { esbuildOptions, runnerFile, USER_TOOLS_MODULE } from '../../infra/bundling';
import { FUNCTIONS } from '../../infra/functions';

/** Every NodejsFunction the construct makes: its construct id, entry and the tools module its bundle aliases. */
const made = vi.hoisted(() => [] as { id: string; entry: string; toolsModule: string; env: Record<string, string> }[]);
vi.mock('aws-cdk-lib/aws-lambda-nodejs', async (original) => {
  const real = await original<typeof import('aws-cdk-lib/aws-lambda-nodejs')>();
  class Recorded extends real.NodejsFunction {
    constructor(scope: never, id: string, props: import('aws-cdk-lib/aws-lambda-nodejs').NodejsFunctionProps) {
      super(scope, id, props);
      const alias = String(props.bundling?.esbuildArgs?.['--alias'] ?? '');
      made.push({ id, entry: props.entry!, toolsModule: alias.slice(`${USER_TOOLS_MODULE}=`.length), env: props.environment ?? {} });
    }
  }
  return { ...real, NodejsFunction: Recorded };
});
// Workers are shared across files (vitest.config.ts): a file before this one may have loaded the construct with the
// real NodejsFunction; load it again so it builds with the recorder above.
vi.resetModules();
const { ToolRunner } = await import('../../infra/tool-runner');

const TOOLS_ENTRY = resolve('test/fixtures/import-time-tools.ts');

/** The functions as the construct bundles them for this isolation, built with the deployed options and a metafile. */
function synth(toolIsolation: 'function' | 'none') {
  made.length = 0;
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), `Bundles${toolIsolation}`);
  new ToolRunner(stack, 'Runner', { tools: { entry: TOOLS_ENTRY, environment: { CRM_KEY: 'k' } }, toolIsolation });
  return Object.fromEntries(made.map((fn) => [fn.id.replace(/Function$/, ''), fn]));
}

async function bundledInputs(toolIsolation: 'function' | 'none'): Promise<Record<string, string[]>> {
  synth(toolIsolation);
  const out = mkdtempSync(join(tmpdir(), 'toolrunner-user-code-'));
  const inputs: Record<string, string[]> = {};
  for (const fn of [...made]) {
    const name = fn.id.replace(/Function$/, '');
    const result = await build({
      ...esbuildOptions(fn.entry, join(out, name, 'index.mjs'), fn.toolsModule || undefined),
      metafile: true,
      logLevel: 'error',
    });
    inputs[name] = Object.keys(result.metafile.inputs).map((f) => resolve(f));
  }
  return inputs;
}

/**
 * The tools entry's own code and dependencies: what bundling it alone reads, less the runner's own code (what a
 * function without tools holds, and the library a tools module imports from the runner: `defineTool`, helpers).
 */
async function toolsModuleInputs(): Promise<Set<string>> {
  const out = mkdtempSync(join(tmpdir(), 'toolrunner-user-code-'));
  const inputsOf = async (entry: string) => {
    const built = await build({ ...esbuildOptions(entry, join(out, 'x.mjs'), TOOLS_ENTRY), metafile: true, logLevel: 'error' });
    return Object.keys(built.metafile.inputs).map((f) => resolve(f));
  };
  const alone = { metafile: { inputs: Object.fromEntries((await inputsOf(TOOLS_ENTRY)).map((f) => [f, 0])) } };
  const runnerOwn = new Set([
    ...(await inputsOf(runnerFile(`functions/handlers/${FUNCTIONS.Validate.entry}`))),
    ...(await inputsOf(runnerFile('functions/index'))),
  ]);
  return new Set(
    Object.keys(alone.metafile.inputs)
      .map((f) => resolve(f))
      .filter((f) => !runnerOwn.has(f)),
  );
}

describe('no user code where the runner’s keys are (the bundler’s metafile)', () => {
  let userCode: Set<string>;
  beforeAll(async () => {
    userCode = await toolsModuleInputs();
  }, 120_000);

  it('with toolIsolation "function" only the Tools bundle holds the tools entry or any of its dependencies', async () => {
    expect(userCode).toContain(TOOLS_ENTRY);
    // The demo tools the fixture builds on are its dependency too: no runner function may hold them.
    expect(userCode).toContain(runnerFile('functions/tools/demo-tools'));
    const inputs = await bundledInputs('function');
    // Every runner function, and the signing key's seed (it writes the key: it must hold no user code either).
    const names = [...Object.keys(FUNCTIONS), 'Seed'];
    expect(Object.keys(inputs).sort()).toEqual(names.sort());
    const holding = Object.fromEntries(
      Object.entries(inputs).map(([name, files]) => [name, files.filter((f) => userCode.has(f)).length > 0]),
    );
    expect(holding).toEqual(Object.fromEntries(names.map((name) => [name, name === 'Tools'])));
    expect(inputs.Tools).toEqual(expect.arrayContaining([...userCode]));
  }, 300_000);

  it('with toolIsolation "function" only Tools gets tools.environment; with "none" every function that runs tools', () => {
    const isolated = synth('function');
    expect(Object.keys(isolated).filter((name) => 'CRM_KEY' in isolated[name].env)).toEqual(['Tools']);
    const inProcess = synth('none');
    expect(
      Object.keys(inProcess)
        .filter((name) => 'CRM_KEY' in inProcess[name].env)
        .sort(),
    ).toEqual(
      Object.keys(FUNCTIONS)
        .filter((name) => name !== 'Tools' && FUNCTIONS[name as keyof typeof FUNCTIONS].tools)
        .sort(),
    );
  });

  it('with toolIsolation "none" the functions that run tools bundle them, as before', async () => {
    const inputs = await bundledInputs('none');
    for (const [name, spec] of Object.entries(FUNCTIONS)) {
      if (name === 'Tools') continue;
      expect(inputs[name].includes(TOOLS_ENTRY), name).toBe(spec.tools);
    }
  }, 300_000);
});
