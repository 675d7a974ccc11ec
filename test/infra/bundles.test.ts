import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorNames } from '../../functions/core/errors';
import { cdkBundling, DEMO_TOOLS_ENTRY, esbuildOptions, LAMBDA_BUNDLING, runnerFile } from '../../infra/bundling';
import { FUNCTION_NAMES } from '../../infra/functions';
import { importBundle, lambdaBundle } from '../../local/bundles';
import { readDefinition } from '../../statemachines/definition';

/** Every error name the ASL's Retry and Catch match that Step Functions or Lambda do not raise themselves. */
function customErrorNames(): string[] {
  const states = Object.values((JSON.parse(readDefinition()) as { States: Record<string, any> }).States);
  const names = states.flatMap((s) => [...(s.Retry ?? []), ...(s.Catch ?? [])].flatMap((r: { ErrorEquals: string[] }) => r.ErrorEquals));
  return [...new Set(names)].filter((n) => !n.startsWith('States.') && !n.startsWith('Lambda.'));
}

/** The errors module bundled as the Lambdas are, and loaded the way Lambda loads a bundle. */
async function bundledErrors(overrides: { keepNames?: boolean } = {}) {
  const outfile = join(mkdtempSync(join(tmpdir(), 'toolrunner-errors-')), 'index.mjs');
  await build({ ...esbuildOptions(runnerFile('functions/core/errors'), outfile, DEMO_TOOLS_ENTRY()), ...overrides });
  return (await importBundle(outfile, 'test')) as Record<string, any>;
}

describe('what is deployed keeps the error names the state machine matches', () => {
  const bundles: Record<string, string> = {};
  beforeAll(async () => {
    for (const name of FUNCTION_NAMES) bundles[name] = readFileSync(await lambdaBundle(name), 'utf8');
  }, 180_000);

  it('bundles with keepNames, and the ASL names are constants in the code', () => {
    expect(LAMBDA_BUNDLING.keepNames).toBe(true);
    expect(LAMBDA_BUNDLING.minify).toBe(true);
    const names = customErrorNames();
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(Object.values(ErrorNames), `${name} is matched by the ASL`).toContain(name);
  });

  it('keeps class and instance names through minification, as the deployed options build them', async () => {
    const errors = await bundledErrors();
    for (const [key, name] of Object.entries(ErrorNames)) {
      expect(errors.ErrorNames[key]).toBe(name);
      const Class = errors[name];
      expect(Class.name).toBe(name);
      expect(new Class('x').name).toBe(name);
    }
  });

  it('would catch the fault: without keepNames the minifier renames the classes', async () => {
    const errors = await bundledErrors({ keepNames: false });
    expect(errors.ApprovalRejectedError.name).not.toBe('ApprovalRejectedError');
    expect(errors.OperationMovedError.name).not.toBe('OperationMovedError');
  });

  it('has every ASL error name as a string in the bundles that send it (API decides approvals, RequestApproval hands tokens back)', () => {
    for (const name of customErrorNames()) {
      const literal = new RegExp(`["'\`]${name}["'\`]`);
      expect(literal.test(bundles.Api) || literal.test(bundles.RequestApproval), name).toBe(true);
    }
  });

  it('never sends a class name read at run time: Step Functions errors are the ErrorNames constants', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const offenders = files('functions').flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/\b[A-Z][A-Za-z0-9]*Error\.name\b/g)].map((m) => `${f}: ${m[0]}`),
    );
    expect(offenders).toEqual([]);
  });

  it("bundles a user's tools module into the Lambdas that run or validate tools, and only those", async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'toolrunner-user-bundles-'));
    const toolsEntry = runnerFile('test/fixtures/user-tools');
    const withTools = readFileSync(await lambdaBundle('Execute', { toolsEntry, cacheDir }), 'utf8');
    const without = readFileSync(await lambdaBundle('Validate', { toolsEntry, cacheDir }), 'utf8');
    expect(withTools).toContain('fixture_look_up_weather');
    expect(without).not.toContain('fixture_look_up_weather');
  }, 120_000);

  it('builds, locally, byte for byte the bundle CDK deploys', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'toolrunner-cdk-')) });
    const stack = new Stack(app, 'BundleCheck');
    new NodejsFunction(stack, 'Api', {
      entry: runnerFile('functions/handlers/api'),
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      bundling: cdkBundling(DEMO_TOOLS_ENTRY()),
    });
    const assembly = app.synth();
    const assetDir = readdirSync(assembly.directory).find((d) => d.startsWith('asset.') && !d.endsWith('.json'))!;
    expect(readFileSync(join(assembly.directory, assetDir, 'index.mjs'), 'utf8')).toBe(bundles.Api);
  }, 120_000);
});
