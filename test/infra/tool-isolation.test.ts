import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { RUNS_TOOL_CODE } from '../../infra/functions';
import { ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';

type Resource = { Type: string; Properties: Record<string, any> };

/** A runner's template, and per function (by construct name) its environment and every action its role may take, with resources. */
function synth(props: Partial<ToolRunnerProps> = {}, more?: (runner: ToolRunner, stack: Stack) => void) {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Isolation');
  const runner = new ToolRunner(stack, 'Runner', {
    tools: { entry: DEMO_TOOLS_ENTRY(), environment: { CRM_URL: 'https://crm' } },
    ...props,
  });
  more?.(runner, stack);
  const json = Template.fromStack(stack).toJSON();
  const resources = json.Resources as Record<string, Resource>;
  const of = (name: string) => {
    const id = Object.keys(resources).find((k) => resources[k].Type === 'AWS::Lambda::Function' && k.startsWith(`Runner${name}Function`));
    if (!id) return undefined;
    const fn = resources[id];
    const roleId = fn.Properties.Role['Fn::GetAtt'][0];
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: { Ref: string }) => x.Ref === roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
    const managed = resources[roleId].Properties.ManagedPolicyArns ?? [];
    return {
      id,
      env: fn.Properties.Environment.Variables as Record<string, unknown>,
      actions: statements.flatMap((s) => [s.Action].flat()),
      statements,
      managed,
    };
  };
  return { runner, of, resources: json.Resources as Record<string, Resource & { DeletionPolicy?: string; UpdateReplacePolicy?: string }> };
}

describe('tool code without the runner’s privileges (toolIsolation)', () => {
  it('by default runs tool code in Tools, whose role and environment hold nothing of the runner’s', () => {
    const { of, resources } = synth();
    const tools = of('Tools')!;
    // One version of Tools, deployed with its callers, kept when a later deploy makes another.
    const versions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Version');
    expect(versions.map(([, r]) => [r.Properties.FunctionName, r.DeletionPolicy, r.UpdateReplacePolicy])).toEqual([
      [{ Ref: tools.id }, 'Retain', 'Retain'],
    ]);
    const version = { Ref: versions[0][0] };
    // Its own log group and X-Ray (which CDK grants every traced function), nothing else: no table, secret,
    // topic, state machine, bucket or function.
    expect([...new Set(tools.actions)].sort()).toEqual([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    expect(tools.managed).toEqual([]);
    expect(Object.keys(tools.env).sort()).toEqual(['CRM_URL', 'NODE_OPTIONS', 'POWERTOOLS_LOG_LEVEL', 'POWERTOOLS_SERVICE_NAME']);
    // The functions making attempts invoke that version (never the unqualified function, which a deploy
    // updates before them), and that version only; no other function may.
    for (const name of ['Api', 'Execute', 'Reconcile', 'Report', 'Validate', 'RequestApproval', 'ExpireApproval', 'Handoff', 'Sweeper']) {
      const fn = of(name)!;
      const invokes = fn.statements.filter((s) => [s.Action].flat().includes('lambda:InvokeFunction'));
      if ((RUNS_TOOL_CODE as readonly string[]).includes(name)) {
        expect(
          invokes.map((s) => s.Resource),
          name,
        ).toEqual([version]);
        expect(fn.env.TOOLS_FUNCTION_NAME, name).toEqual(version);
      } else {
        expect(invokes, name).toEqual([]);
        expect(fn.env.TOOLS_FUNCTION_NAME, name).toBeUndefined();
      }
    }
  });

  it('grants toolPolicies and grantSecretToTools to Tools alone, and never the config secret', () => {
    const { of } = synth(
      { toolPolicies: [new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::reports/*'] })] },
      (runner, stack) => {
        runner.grantSecretToTools(new secrets.Secret(stack, 'CrmKey'));
        expect(() => runner.grantSecretToTools(runner.configSecret)).toThrow(/not for tools/);
      },
    );
    expect(of('Tools')!.actions).toEqual(expect.arrayContaining(['s3:GetObject', 'secretsmanager:GetSecretValue']));
    const reports = (name: string) => of(name)!.statements.filter((st) => [st.Resource].flat().includes('arn:aws:s3:::reports/*'));
    expect(reports('Tools')).toHaveLength(1);
    for (const name of ['Api', 'Execute', 'Reconcile']) expect(reports(name), name).toEqual([]);
  });

  it('"none" runs tool code in Api, Execute and Reconcile: no Tools function, no invoke, their roles get toolPolicies', () => {
    const { of, runner } = synth({
      toolIsolation: 'none',
      toolPolicies: [new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::reports/*'] })],
    });
    expect(of('Tools')).toBeUndefined();
    expect(runner.functions.Tools).toBeUndefined();
    for (const name of RUNS_TOOL_CODE) {
      expect(of(name)!.actions, name).not.toContain('lambda:InvokeFunction');
      expect(of(name)!.actions, name).toContain('s3:GetObject');
      expect(of(name)!.env.TOOLS_FUNCTION_NAME, name).toBeUndefined();
    }
    expect(() => synth({ toolIsolation: 'sandbox' as 'none' })).toThrow(/toolIsolation must be/);
  });
});
