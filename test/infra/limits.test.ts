import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { APPROVAL_EXECUTION_MARGIN_SECONDS, MAX_APPROVAL_TTL_SECONDS, RunnerConfigSchema } from '../../functions/core/config';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { ToolRunner } from '../../infra/tool-runner';
import { readDefinition } from '../../statemachines/definition';
import { synthDemo } from '../support/synth';

const config = (approvalTtlSeconds: number) => RunnerConfigSchema.safeParse({ principals: [], approvalTtlSeconds });

describe('an approval can never outlive its execution', () => {
  const executionTimeout = (JSON.parse(readDefinition()) as { TimeoutSeconds?: number }).TimeoutSeconds;

  it('caps approvalTtlSeconds below the state machine timeout, with time left for the attempts after it', () => {
    expect(executionTimeout).toBeDefined();
    expect(MAX_APPROVAL_TTL_SECONDS + APPROVAL_EXECUTION_MARGIN_SECONDS).toBeLessThanOrEqual(executionTimeout!);
    expect(config(MAX_APPROVAL_TTL_SECONDS).success).toBe(true);
    expect(config(MAX_APPROVAL_TTL_SECONDS + 1).success).toBe(false);
    expect(config(executionTimeout!).success).toBe(false);
  });

  it('refuses at synth time a construct whose approval TTL exceeds the cap', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Ttl');
    expect(() => new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, approvalTtlSeconds: 30 * 86400 })).toThrow(
      /approvalTtlSeconds/,
    );
  });
});

describe('API Gateway access logs', () => {
  it('logs every request of the stage as JSON, without bodies, to a log group that expires', () => {
    const { template } = synthDemo();
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    const destination = stage.Properties.AccessLogSettings?.DestinationArn?.['Fn::GetAtt']?.[0] as string;
    expect(destination).toBeDefined();
    const format = JSON.parse(stage.Properties.AccessLogSettings.Format) as Record<string, string>;
    expect(format.requestId).toBe('$context.requestId');
    expect(Object.values(format).join(' ')).not.toMatch(/body|header|authorization/i);
    const group = template.findResources('AWS::Logs::LogGroup')[destination];
    expect(group.Properties.RetentionInDays).toBeGreaterThan(0);
  });
});

describe('the API function’s memory', () => {
  const apiFunction = (template: ReturnType<typeof synthDemo>['template']) =>
    Object.entries(template.findResources('AWS::Lambda::Function')).find(([id]) => /ApiFunction/.test(id))?.[1];

  it('is 256 MB unless apiMemoryMb says otherwise, and only the API function follows it', () => {
    const { template } = synthDemo();
    expect(apiFunction(template)?.Properties.MemorySize).toBe(256);
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Mem');
    new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, apiMemoryMb: 1769 });
    const fns = Object.entries(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
    expect(fns.find(([id]) => /ApiFunction/.test(id))?.[1].Properties.MemorySize).toBe(1769);
    expect(fns.find(([id]) => /ExecuteFunction/.test(id))?.[1].Properties.MemorySize).toBe(512);
  });

  it('refuses a size Lambda does not offer', () => {
    for (const apiMemoryMb of [64, 300.5, 20_000]) {
      const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), `Mem${String(apiMemoryMb).replace('.', '')}`);
      expect(() => new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, apiMemoryMb })).toThrow(/apiMemoryMb/);
    }
  });
});
