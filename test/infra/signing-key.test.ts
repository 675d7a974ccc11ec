import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { seedOf } from '../../functions/handlers/seed-signing-key';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { FUNCTIONS } from '../../infra/functions';
import { ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';

type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };

function synth(props: Partial<ToolRunnerProps> = {}) {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Keys');
  const runner = new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
  const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  return { runner, resources, idOf };
}

const agent = { id: 'agent', keySha256: 'a'.repeat(64), roles: ['agent' as const], tools: '*' as const };
const approver = { id: 'approver', keySha256: 'b'.repeat(64), roles: ['approver' as const], tools: '*' as const };

describe('the signing key: a secret of its own that no update regenerates', () => {
  it('keeps one generation template whatever the principals, the TTL or other props', () => {
    const variants = [
      synth(),
      synth({ approvalTtlSeconds: 3600 }),
      synth({ principals: [agent] }),
      synth({ principals: [agent, approver], approvalTtlSeconds: 60, apiMemoryMb: 1024 }),
    ];
    const keys = variants.map(({ runner, resources, idOf }) => resources[idOf(runner.signingKey!)]);
    for (const key of keys) {
      expect(key.Type).toBe('AWS::SecretsManager::Secret');
      expect(key.Properties.GenerateSecretString).toEqual({
        SecretStringTemplate: '{}',
        GenerateStringKey: 'approvalSecret',
        ExcludePunctuation: true,
        PasswordLength: 48,
      });
    }
    // Nothing else of the key's resource varies either: the same logical id, the same properties.
    expect(new Set(variants.map(({ runner, idOf }) => idOf(runner.signingKey!))).size).toBe(1);
    expect(new Set(keys.map((k) => JSON.stringify(k))).size).toBe(1);
  }, 240_000);

  it('the operator owns the document without principals: a fixed generation template, the one stacks had before', () => {
    const documents = [synth(), synth({ approvalTtlSeconds: 3600 })].map(
      ({ runner, resources, idOf }) => resources[idOf(runner.configSecret as never)],
    );
    for (const document of documents)
      expect(document.Properties.GenerateSecretString).toEqual({
        // Byte for byte the template of a stack deployed before the key moved out, with neither prop given.
        SecretStringTemplate: '{"principals":[],"approvalTtlSeconds":86400}',
        GenerateStringKey: 'approvalSecret',
        ExcludePunctuation: true,
        PasswordLength: 48,
      });
  });

  it('the construct owns the document with principals: written whole, nothing generated', () => {
    const { runner, resources, idOf } = synth({ principals: [agent], approvalTtlSeconds: 3600 });
    const document = resources[idOf(runner.configSecret as never)];
    expect(document.Properties.GenerateSecretString).toBeUndefined();
    expect(JSON.parse(document.Properties.SecretString)).toEqual({ principals: [agent] });
  });

  it('gives the TTL prop to the functions as a variable, only when it is set', () => {
    const envOf = (resources: Record<string, Resource>) =>
      Object.entries(resources).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('RunnerApiFunction'))![1].Properties
        .Environment.Variables;
    expect(envOf(synth({ approvalTtlSeconds: 3600 }).resources).TOOLRUNNER_APPROVAL_TTL_SECONDS).toBe('3600');
    expect(envOf(synth().resources).TOOLRUNNER_APPROVAL_TTL_SECONDS).toBeUndefined();
  });

  it('seeds the key once from the document, before any function that signs reads it', () => {
    const { runner, resources, idOf } = synth({ principals: [agent] });
    const configId = idOf(runner.configSecret as never);
    const keyId = idOf(runner.signingKey!);
    const [seedId, seed] = Object.entries(resources).find(([, r]) => r.Type === 'Custom::ToolRunnerSigningKeySeed')!;
    expect(seed.Properties).toMatchObject({ ConfigSecretArn: { Ref: configId }, SigningKeyArn: { Ref: keyId } });
    // Its function may read the document and write the key, nothing else of the runner's.
    const seedFnId = seed.Properties.ServiceToken['Fn::GetAtt'][0] as string;
    const roleId = resources[seedFnId].Properties.Role['Fn::GetAtt'][0] as string;
    const statements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: { Ref: string }) => x.Ref === roleId))
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      // Besides its own logs and X-Ray (granted to every function of the runner).
      .filter((st: { Action: string | string[] }) => ![st.Action].flat().every((a) => a.startsWith('logs:') || a.startsWith('xray:')));
    expect(statements).toEqual([
      expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: { Ref: configId } }),
      expect.objectContaining({ Action: 'secretsmanager:PutSecretValue', Resource: { Ref: keyId } }),
    ]);
    // Every function that reads the principals document waits for the seed and gets the key's ARN.
    const readers = Object.entries(FUNCTIONS)
      .filter(([, f]) => (f.ports as readonly string[]).includes('config'))
      .map(
        ([name]) =>
          Object.entries(resources).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith(`Runner${name}Function`))!,
      );
    expect(readers.length).toBeGreaterThan(5);
    for (const [id, fn] of readers) {
      expect(fn.DependsOn, id).toContain(seedId);
      expect(fn.Properties.Environment.Variables.SIGNING_KEY_SECRET_ARN, id).toEqual({ Ref: keyId });
    }
  });

  it('with a configSecret of the user’s own, its approvalSecret signs: no key, no seed', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Own');
    const mine = new secrets.Secret(stack, 'Mine');
    const runner = new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, configSecret: mine });
    expect(runner.signingKey).toBeUndefined();
    const json = JSON.stringify(Template.fromStack(stack).toJSON());
    expect(json).not.toContain('SIGNING_KEY_SECRET_ARN');
    expect(json).not.toContain('Custom::ToolRunnerSigningKeySeed');
  });
});

describe('the seed: the key the links in flight were signed with', () => {
  const doc = (approvalSecret?: string) => JSON.stringify({ principals: [], ...(approvalSecret ? { approvalSecret } : {}) });
  it('takes the document’s current approvalSecret (the operator’s document, untouched by the update)', () => {
    expect(seedOf(doc('k'.repeat(48)), doc('p'.repeat(48)))).toBe('k'.repeat(48));
  });
  it('takes the previous version’s when the update just rewrote the document without one (principals the construct owns)', () => {
    expect(seedOf(doc(), doc('p'.repeat(48)))).toBe('p'.repeat(48));
  });
  it('takes none for a new stack, nor a key the runner would refuse', () => {
    expect(seedOf(doc(), undefined)).toBeUndefined();
    expect(seedOf(doc('short'), 'not json')).toBeUndefined();
  });
});
