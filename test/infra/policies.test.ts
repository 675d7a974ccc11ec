import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { describe, expect, it } from 'vitest';
import { BUNDLED_POLICIES_FILE, cdkBundling, DEMO_TOOLS_ENTRY, runnerFile } from '../../infra/bundling';
import { ToolRunner } from '../../infra/tool-runner';

const POLICIES = '@id("calls") permit(principal, action in Action::"call", resource);\n';

function policyFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'toolrunner-policies-')), 'my-policies.cedar');
  writeFileSync(file, POLICIES);
  return file;
}

describe('policies on AWS', () => {
  it("the construct's policiesFile reaches every runner function as TOOLRUNNER_POLICIES_FILE", () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'PoliciesStack', { env: { account: '123456789012', region: 'eu-west-1' } });
    const runner = new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, policiesFile: policyFile() });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Properties?: Record<string, any> }>;
    for (const name of ['Api', 'Validate', 'Execute'] as const) {
      const fn = resources[stack.getLogicalId(runner.functions[name].node.defaultChild as never)].Properties!;
      expect(fn.Environment.Variables.TOOLRUNNER_POLICIES_FILE, name).toBe(BUNDLED_POLICIES_FILE);
    }
    expect(() => new ToolRunner(stack, 'Missing', { tools: { entry: DEMO_TOOLS_ENTRY() }, policiesFile: '/nonexistent/p.cedar' })).toThrow(
      /policiesFile .* does not exist/,
    );
  }, 120_000);

  it('the deployed asset holds the bundle, the Cedar engine beside it, and the policy file', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'toolrunner-cdk-')) });
    const stack = new Stack(app, 'PolicyAsset');
    new NodejsFunction(stack, 'Api', {
      entry: runnerFile('functions/handlers/api'),
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      bundling: cdkBundling(DEMO_TOOLS_ENTRY(), 'node24', policyFile()),
    });
    const assembly = app.synth();
    const assetDir = join(assembly.directory, readdirSync(assembly.directory).find((d) => d.startsWith('asset.') && !d.endsWith('.json'))!);
    expect(readdirSync(assetDir).sort()).toEqual(['cedar_wasm_bg.wasm', 'index.mjs', 'index.mjs.map', BUNDLED_POLICIES_FILE].sort());
    expect(readFileSync(join(assetDir, BUNDLED_POLICIES_FILE), 'utf8')).toBe(POLICIES);
    // The engine's loader finds its module beside the bundle, not at a build machine's path.
    expect(readFileSync(join(assetDir, 'index.mjs'), 'utf8')).toContain('import.meta.dirname}/cedar_wasm_bg.wasm');
  }, 120_000);
});
