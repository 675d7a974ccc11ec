import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { bundleTargetOf, ToolRunner } from '../../infra/tool-runner';

describe('the construct’s runtime prop', () => {
  it('runs every function on the runtime it names, Node.js 24 by default', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Runtimes');
    new ToolRunner(stack, 'Older', { tools: { entry: DEMO_TOOLS_ENTRY() }, runtime: lambda.Runtime.NODEJS_22_X });
    const runtimes = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).map((f) => f.Properties.Runtime);
    expect(new Set(runtimes)).toEqual(new Set(['nodejs22.x']));
  });

  it('bundles for the runtime’s Node.js major and refuses anything but Node.js 22 or newer', () => {
    expect(bundleTargetOf(lambda.Runtime.NODEJS_24_X)).toBe('node24');
    expect(bundleTargetOf(lambda.Runtime.NODEJS_22_X)).toBe('node22');
    expect(() => bundleTargetOf(lambda.Runtime.NODEJS_20_X)).toThrow(/22 or newer/);
    expect(() => bundleTargetOf(lambda.Runtime.PYTHON_3_13)).toThrow(/not a Node.js runtime/);
  });
});
