import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { OAuthSchema } from '../../functions/core/config';
import { principalForClaims } from '../../functions/core/oauth-principal';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { nagPacks } from '../../infra/nag';
import { domainPrefixOf } from '../../infra/oauth';
import { ToolRunner } from '../../infra/tool-runner';

type Resources = Record<string, { Type: string; Properties?: Record<string, any> }>;

const ROLE_NAMES = ['agent', 'approver', 'reviewer', 'admin'] as const;

/**
 * The scopes Cognito puts in a client-credentials access token: every scope the client is allowed when the
 * request names none, else the requested ones it is allowed ("If the client doesn't request any scopes, the
 * authentication server uses all custom scopes associated with the client":
 * https://docs.aws.amazon.com/cognito/latest/developerguide/token-endpoint.html, the `scope` parameter).
 */
function cognitoGrantedScopes(allowed: string[], requested?: string[]): string[] {
  return requested === undefined ? allowed : requested.filter((s) => allowed.includes(s));
}

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

  it('creates a pool with a resource server scoped per role, on a stable domain', () => {
    expect(ofType('AWS::Cognito::UserPool')).toHaveLength(1);
    const [server] = ofType('AWS::Cognito::UserPoolResourceServer');
    expect(server.Properties!.Identifier).toBe('toolrunner');
    expect(server.Properties!.Scopes.map((s: { ScopeName: string }) => s.ScopeName)).toEqual(['agent', 'approver', 'reviewer', 'admin']);
    const [domain] = ofType('AWS::Cognito::UserPoolDomain');
    const prefix = domain.Properties!.Domain as string;
    expect(prefix).toMatch(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/);
    expect(prefix).not.toMatch(/aws|amazon|cognito/);
    // Derived from the stack and the construct path: the same on every synthesis, so a redeploy keeps it.
    expect(domainPrefixOf(built.pooled.oauth!)).toBe(prefix);
    expect(oauthApp().pooled.oauth && domainPrefixOf(oauthApp().pooled.oauth!)).toBe(prefix);
  });

  /** A client's allowed scopes as deployed: the resource server's `Ref` is its identifier. */
  const allowedScopesOf = (client: { Properties?: Record<string, any> }): string[] =>
    (client.Properties!.AllowedOAuthScopes as unknown[]).map((scope) => {
      if (typeof scope === 'string') return scope;
      const [separator, parts] = (scope as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
      return parts.map((p) => (typeof p === 'string' ? p : resources[(p as { Ref: string }).Ref].Properties!.Identifier)).join(separator);
    });
  const clientOf = (role: (typeof ROLE_NAMES)[number]) =>
    resources[built.stack.getLogicalId(built.pooled.oauth!.clients![role].node.defaultChild as never)];

  it('gives each role an app client of its own, allowed that role’s scope alone', () => {
    const clients = ofType('AWS::Cognito::UserPoolClient');
    expect(clients).toHaveLength(ROLE_NAMES.length);
    for (const client of clients) {
      expect(allowedScopesOf(client)).toHaveLength(1);
      expect(client.Properties).toMatchObject({ GenerateSecret: true, AllowedOAuthFlows: ['client_credentials'] });
    }
    for (const role of ROLE_NAMES) expect(allowedScopesOf(clientOf(role))).toEqual([`toolrunner/${role}`]);
    // The API accepts tokens of every client; the agent's is still `appClient`.
    const pooled = JSON.stringify(fnOf(built.pooled, 'Api').Environment.Variables.TOOLRUNNER_OAUTH);
    for (const role of ROLE_NAMES)
      expect(pooled).toContain(built.stack.getLogicalId(built.pooled.oauth!.clients![role].node.defaultChild as never));
    expect(built.pooled.oauth!.appClient).toBe(built.pooled.oauth!.clients!.agent);
    // The agents' client keeps the construct id it had when it was the only client: an upgrade keeps its id and secret.
    expect(built.pooled.oauth!.clients!.agent.node.path).toBe('AwsCognitoRunnerStack/Runner/OAuth/UserPool/AgentClient');
  });

  it('outputs each client’s id under its role, so operators hand out the right one', () => {
    for (const role of ROLE_NAMES) {
      const title = `${role[0].toUpperCase()}${role.slice(1)}ClientId`;
      const matching = Object.entries(outputs).filter(([id]) => new RegExp(`^RunnerOAuth${title}[0-9A-F]{8}$`).test(id));
      expect(matching, title).toHaveLength(1);
      expect(matching[0][1].Value).toEqual({
        Ref: built.stack.getLogicalId(built.pooled.oauth!.clients![role].node.defaultChild as never),
      });
    }
    // Where they obtain tokens, and the pool that holds their secrets.
    const named = (suffix: string) => Object.entries(outputs).find(([id]) => new RegExp(`^RunnerOAuth${suffix}[0-9A-F]{8}$`).test(id))?.[1];
    expect(JSON.stringify(named('TokenEndpoint')?.Value)).toContain('/oauth2/token');
    expect(named('UserPoolId')?.Value).toEqual({ Ref: built.stack.getLogicalId(built.pooled.oauth!.userPool!.node.defaultChild as never) });
  });

  it('maps a token each client obtains without asking for a scope to its role alone', () => {
    const config = built.pooled.oauth!.config;
    const oauth = OAuthSchema.parse({ ...config, issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/pool', clientIds: ['c'] });
    for (const role of ROLE_NAMES) {
      const scope = cognitoGrantedScopes(allowedScopesOf(clientOf(role))).join(' ');
      const claims = { iss: oauth.issuer, sub: `${role}-client`, client_id: `${role}-client`, token_use: 'access', scope };
      expect(principalForClaims({ principals: [] }, oauth, claims)?.roles, role).toEqual([role]);
    }
    // Asking the agent's client for admin gets no admin scope: the client is not allowed it.
    expect(cognitoGrantedScopes(allowedScopesOf(clientOf('agent')), ['toolrunner/admin'])).toEqual([]);
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
