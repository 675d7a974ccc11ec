import { beforeAll, describe, expect, it } from 'vitest';
import type { Template } from 'aws-cdk-lib/assertions';
import { synthDemo } from '../support/synth';
import { matchRoute } from '../../local/api-gateway-event';
import { API_ROUTES } from '../../infra/functions';

let template: Template;
beforeAll(() => {
  template = synthDemo().template;
});

type Resource = { Type: string; Properties: Record<string, any> };
const ofType = (type: string) => Object.entries(template.toJSON().Resources as Record<string, Resource>).filter(([, r]) => r.Type === type);

describe('Slack’s interactions route in the template', () => {
  it('is an HTTP API route without an authorizer, to the Api function, which reads the config secret', () => {
    const [route] = ofType('AWS::ApiGatewayV2::Route').filter(
      ([, r]) => r.Properties.RouteKey === 'POST /v1/integrations/slack/interactions',
    );
    expect(route, 'the route').toBeDefined();
    expect(route[1].Properties.AuthorizationType ?? 'NONE').toBe('NONE');
    expect(route[1].Properties.AuthorizerId).toBeUndefined();
    const [integrationId, integration] = ofType('AWS::ApiGatewayV2::Integration')[0];
    expect(route[1].Properties.Target).toEqual({ 'Fn::Join': ['', ['integrations/', { Ref: integrationId }]] });
    expect(JSON.stringify(integration.Properties.IntegrationUri)).toMatch(/RunnerApiFunction/);

    const [apiId, api] = ofType('AWS::Lambda::Function').find(([id]) => /RunnerApiFunction/.test(id))!;
    const secretRef = api.Properties.Environment.Variables.CONFIG_SECRET_ARN;
    expect(secretRef).toBeDefined();
    const roleRef = JSON.stringify(api.Properties.Role);
    const reads = ofType('AWS::IAM::Policy').filter(
      ([, p]) =>
        JSON.stringify(p.Properties.Roles).includes(JSON.parse(roleRef)['Fn::GetAtt']?.[0] ?? '@') &&
        p.Properties.PolicyDocument.Statement.some(
          (s: { Action: string | string[]; Resource: unknown }) =>
            [s.Action].flat().includes('secretsmanager:GetSecretValue') && JSON.stringify(s.Resource).includes(JSON.stringify(secretRef)),
        ),
    );
    expect(reads.length, `${apiId} reads the config secret`).toBeGreaterThan(0);
  });

  it('is the route the gateway picks for a POST there, and the proxy for anything else under it', () => {
    expect(matchRoute(API_ROUTES, 'POST', '/v1/integrations/slack/interactions')).toEqual({
      routeKey: 'POST /v1/integrations/slack/interactions',
    });
    expect(matchRoute(API_ROUTES, 'GET', '/v1/integrations/slack/interactions')?.routeKey).toBe('ANY /v1/{proxy+}');
  });
});
