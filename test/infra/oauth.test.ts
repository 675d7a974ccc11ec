import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { nagPacks } from '../../infra/nag';
import { domainPrefixOf } from '../../infra/oauth';
import { ToolRunner } from '../../infra/tool-runner';

type Resources = Record<string, { Type: string; Properties?: Record<string, any> }>;

/** One stack with a runner on a Cognito pool it creates, one on an issuer of the user's (names as a user would pick). */
function oauthApp() {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const env = { account: '123456789012', region: 'eu-west-1' };
  const tools = { entry: DEMO_TOOLS_ENTRY() };
  const stack = new Stack(app, 'AwsCognitoRunnerStack', { env });
  const pooled = new ToolRunner(stack, 'Runner', { tools, oauth: { cognito: true, tools: ['get_order'] } });
  const external = new ToolRunner(stack, 'External', {
    tools,
    oauth: { issuer: 'https://login.example.com/tenant', audience: 'api://toolrunner', rolesClaim: 'roles' },
  });
  return { app, stack, pooled, external };
}

describe('the construct’s oauth prop', () => {
  let built: ReturnType<typeof oauthApp>;
  let resources: Resources;
  let outputs: Record<string, { Value: unknown }>;
  beforeAll(() => {
    built = oauthApp();
    const template = Template.fromStack(built.stack).toJSON();
    resources = template.Resources as Resources;
    outputs = template.Outputs as Record<string, { Value: unknown }>;
  }, 180_000);
  const ofType = (type: string) => Object.values(resources).filter((r) => r.Type === type);
  const fnOf = (runner: ToolRunner, name: 'Api' | 'Execute') =>
    resources[built.stack.getLogicalId(runner.functions[name].node.defaultChild as never)].Properties!;

  it('gives the API function the issuer to check tokens against, and no other function', () => {
    const external = JSON.parse(fnOf(built.external, 'Api').Environment.Variables.TOOLRUNNER_OAUTH);
    expect(external).toEqual({ issuer: 'https://login.example.com/tenant', audience: 'api://toolrunner', rolesClaim: 'roles' });
    expect(fnOf(built.external, 'Execute').Environment.Variables.TOOLRUNNER_OAUTH).toBeUndefined();
    // Cognito's values are tokens until deploy: the issuer is the pool's provider URL, the client named in clientIds.
    const pooled = JSON.stringify(fnOf(built.pooled, 'Api').Environment.Variables.TOOLRUNNER_OAUTH);
    expect(pooled).toContain('ProviderURL');
    expect(pooled).toContain('clientIds');
    expect(pooled).toContain('toolrunner/agent');
  });

  it('creates a pool with a resource server scoped per role and a client-credentials client, on a stable domain', () => {
    expect(ofType('AWS::Cognito::UserPool')).toHaveLength(1);
    const [server] = ofType('AWS::Cognito::UserPoolResourceServer');
    expect(server.Properties!.Identifier).toBe('toolrunner');
    expect(server.Properties!.Scopes.map((s: { ScopeName: string }) => s.ScopeName)).toEqual(['agent', 'approver', 'reviewer', 'admin']);
    const [client] = ofType('AWS::Cognito::UserPoolClient');
    expect(client.Properties).toMatchObject({ GenerateSecret: true, AllowedOAuthFlows: ['client_credentials'] });
    const [domain] = ofType('AWS::Cognito::UserPoolDomain');
    const prefix = domain.Properties!.Domain as string;
    expect(prefix).toMatch(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/);
    expect(prefix).not.toMatch(/aws|amazon|cognito/);
    // Derived from the stack and the construct path: the same on every synthesis, so a redeploy keeps it.
    expect(domainPrefixOf(built.pooled.oauth!)).toBe(prefix);
    expect(oauthApp().pooled.oauth && domainPrefixOf(oauthApp().pooled.oauth!)).toBe(prefix);
  });

  it('routes the metadata to the API and outputs its URL', () => {
    const keys = ofType('AWS::ApiGatewayV2::Route').map((r) => r.Properties!.RouteKey);
    expect(keys.filter((k) => k.startsWith('ANY /.well-known/oauth-protected-resource'))).toHaveLength(4);
    const urls = Object.entries(outputs).filter(([id]) => id.includes('ProtectedResourceMetadataUrl'));
    expect(urls).toHaveLength(2);
    expect(JSON.stringify(urls[0][1].Value)).toContain('/.well-known/oauth-protected-resource');
  });

  it('passes cdk-nag with each acknowledgement reasoned', () => {
    const findings = nagPacks(built.app).flatMap((pack) => pack.validateScope(built.stack).violations.map((v) => v.ruleName));
    expect(findings).toEqual([]);
  });
});
