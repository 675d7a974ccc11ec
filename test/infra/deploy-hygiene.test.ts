import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string };

function synth(props: Partial<ToolRunnerProps> = {}, env?: { account: string; region: string }, id = 'Runner') {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Hygiene', { env });
  new ToolRunner(stack, id, { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  return { stack, resources: Template.fromStack(stack).toJSON().Resources as Record<string, Resource> };
}

const ofType = (resources: Record<string, Resource>, type: string) => Object.values(resources).filter((r) => r.Type === type);

describe('a failed first deploy leaves nothing behind; destroy removes everything', () => {
  it('retains the data on update and delete, never on a create that rolls back', () => {
    const { resources } = synth();
    const kept = [
      ...ofType(resources, 'AWS::DynamoDB::Table'),
      ...ofType(resources, 'AWS::S3::Bucket'),
      ...ofType(resources, 'AWS::SecretsManager::Secret'),
      // The functions' log groups; the state machines' have fixed names and go with the stack.
      ...ofType(resources, 'AWS::Logs::LogGroup').filter((r) => !String(r.Properties.LogGroupName ?? '').startsWith('/aws/vendedlogs/')),
    ];
    // Two secrets (the principals document and the signing key); twelve log groups (the signing key seed's too).
    expect(kept.length).toBe(6 + 1 + 2 + 12);
    for (const r of kept)
      expect({ type: r.Type, deletion: r.DeletionPolicy, replace: r.UpdateReplacePolicy }).toEqual({
        type: r.Type,
        deletion: 'RetainExceptOnCreate',
        replace: 'Retain',
      });
    // Nothing empties a retained bucket.
    expect(ofType(resources, 'Custom::S3AutoDeleteObjects')).toEqual([]);
  });

  it('with removalPolicy DESTROY, cdk destroy empties the bucket before deleting it', () => {
    const { resources } = synth({ removalPolicy: RemovalPolicy.DESTROY });
    const [bucket] = ofType(resources, 'AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Delete');
    const [emptier] = ofType(resources, 'Custom::S3AutoDeleteObjects');
    expect(emptier.Properties.BucketName).toEqual({ Ref: Object.entries(resources).find(([, r]) => r === bucket)![0] });
  });
});

describe('names that hold across accounts and moves', () => {
  it('the Cognito domain prefix ends in the account; cognitoDomainPrefix keeps an existing one', () => {
    const agnostic = ofType(synth({ oauth: { cognito: true } }).resources, 'AWS::Cognito::UserPoolDomain')[0].Properties.Domain;
    expect(JSON.stringify(agnostic)).toContain('{"Ref":"AWS::AccountId"}');
    const domainIn = (account: string) =>
      ofType(synth({ oauth: { cognito: true } }, { account, region: 'eu-west-1' }).resources, 'AWS::Cognito::UserPoolDomain')[0].Properties
        .Domain as string;
    const [a, b] = [domainIn('111111111111'), domainIn('222222222222')];
    expect(a).not.toBe(b);
    for (const d of [a, b]) expect(d).toMatch(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/);
    expect(a.endsWith('-111111111111')).toBe(true);
    const kept = synth({ oauth: { cognito: true }, cognitoDomainPrefix: 'runner-prod-1a2b3c' }).resources;
    expect(ofType(kept, 'AWS::Cognito::UserPoolDomain')[0].Properties.Domain).toBe('runner-prod-1a2b3c');
  });

  it('stateMachineNamePrefix pins both state machines whatever the construct path', () => {
    const names = (id: string, prefix?: string) =>
      ofType(synth({ stateMachineNamePrefix: prefix }, undefined, id).resources, 'AWS::StepFunctions::StateMachine')
        .map((r) => r.Properties.StateMachineName)
        .sort();
    expect(names('Runner')).not.toEqual(names('Moved'));
    expect(names('Moved', 'Hygiene-Runner-1a2b3c4d')).toEqual([
      'Hygiene-Runner-1a2b3c4d-invocation',
      'Hygiene-Runner-1a2b3c4d-invocation-express',
    ]);
    expect(names('Runner', 'Hygiene-Runner-1a2b3c4d')).toEqual(names('Moved', 'Hygiene-Runner-1a2b3c4d'));
    expect(() => names('Runner', 'has space')).toThrow(/stateMachineNamePrefix must be 1 to 61/);
  });
});

describe("Lambda's 4 KB environment, checked at synth", () => {
  it('fails naming the function when the environment could pass 4 KB once its tokens resolve', () => {
    // 3,000 bytes of the user's own, plus the runner's variables at their longest (tables 255, ARNs, URLs).
    const environment = { UPSTREAM_CONFIG: 'x'.repeat(3000) };
    // Without isolation the Api loads the tools and gets their variables beside the runner's (with it, only Tools).
    expect(() => synth({ tools: { entry: DEMO_TOOLS_ENTRY(), environment }, toolIsolation: 'none' })).toThrow(
      /the Api function's environment could reach \d+ bytes/,
    );
    // The same variable short enough passes.
    expect(() => synth({ tools: { entry: DEMO_TOOLS_ENTRY(), environment: { UPSTREAM_CONFIG: 'x'.repeat(300) } } })).not.toThrow();
  });

  it('counts a token at the longest value its resource type allows, not at its length in the template', () => {
    // Literal, the variables fit with room to spare; the runner's own tokens (six table names of up to 255,
    // secret, topic and state machine ARNs) are what push it over.
    const environment = { UPSTREAM_CONFIG: 'x'.repeat(1800) };
    expect(() => synth({ tools: { entry: DEMO_TOOLS_ENTRY(), environment }, toolIsolation: 'none' })).toThrow(/Api function's environment/);
  });
});
