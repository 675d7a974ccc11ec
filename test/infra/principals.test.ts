import { createHash } from 'node:crypto';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../functions/core/config';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { ToolRunner } from '../../infra/tool-runner';

const key = 'tr_agent_key_that_never_reaches_the_template';

describe('the construct’s principals prop: hashes only, in the template and the secret', () => {
  it('writes each key as its SHA-256 into the secret it creates; the key appears nowhere in the template', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Principals');
    new ToolRunner(stack, 'Runner', {
      tools: { entry: DEMO_TOOLS_ENTRY() },
      principals: [
        { id: 'agent', key, roles: ['agent'], tools: '*' },
        { id: 'ci', keySha256: 'a'.repeat(64), roles: ['agent'], tools: ['get_order'] },
      ],
    });
    const json = Template.fromStack(stack).toJSON();
    expect(JSON.stringify(json)).not.toContain(key);
    const [secret] = Object.values(json.Resources as Record<string, { Type: string; Properties: any }>).filter(
      (r) => r.Type === 'AWS::SecretsManager::Secret' && String(r.Properties.Description).includes('principals'),
    );
    // The construct owns the document: written whole (no generation template a deploy could regenerate).
    expect(secret.Properties.GenerateSecretString).toBeUndefined();
    const document = JSON.parse(secret.Properties.SecretString);
    expect(document.principals).toEqual([
      { id: 'agent', keySha256: createHash('sha256').update(key).digest('hex'), roles: ['agent'], tools: '*' },
      { id: 'ci', keySha256: 'a'.repeat(64), roles: ['agent'], tools: ['get_order'] },
    ]);
    // The document the secret will hold is one the runner reads (the signing key is apart from it).
    expect(RunnerConfigSchema.safeParse(document).success).toBe(true);
  });

  it('refuses principals beside configSecret, and an invalid principal, at synth', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Refused');
    const configSecret = new secrets.Secret(stack, 'Mine');
    expect(
      () =>
        new ToolRunner(stack, 'A', {
          tools: { entry: DEMO_TOOLS_ENTRY() },
          configSecret,
          principals: [{ id: 'a', key, roles: ['agent'], tools: '*' }],
        }),
    ).toThrow(/with configSecret/);
    expect(
      () =>
        new ToolRunner(stack, 'B', {
          tools: { entry: DEMO_TOOLS_ENTRY() },
          principals: [{ id: 'a', key, roles: ['pilot' as 'agent'], tools: '*' }],
        }),
    ).toThrow(/ToolRunner: principals: not a valid config document/);
  });
});
