import { CfnOutput, Duration, Names, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { OAuthConfig } from '../functions/core/config';

/** A role the runner grants from a scope of the Cognito resource server (`toolrunner/<role>`). */
export type ToolRunnerRole = 'agent' | 'approver' | 'reviewer' | 'admin';

/** The runner's roles, each a scope of the Cognito resource server the construct creates. */
const ROLES: readonly ToolRunnerRole[] = ['agent', 'approver', 'reviewer', 'admin'];

/** The id each role's app client has in the construct tree (`AgentClient` kept: upgrades keep the agents' client). */
const CLIENT_IDS: Record<ToolRunnerRole, string> = {
  agent: 'AgentClient',
  approver: 'ApproverClient',
  reviewer: 'ReviewerClient',
  admin: 'AdminClient',
};

/**
 * The `oauth` prop: any OpenID Connect issuer (the config document's `oauth` shape), or `{ cognito: true }`
 * for a Cognito user pool the construct creates. Either wins over the principals document's `oauth`.
 */
export type ToolRunnerOAuth =
  | (Omit<OAuthConfig, 'principalClaim' | 'tools'> & Partial<Pick<OAuthConfig, 'principalClaim' | 'tools'>>)
  | {
      /**
       * Create a user pool with a resource server (`toolrunner`, one scope per role) and one client-credentials
       * app client per role, each allowed its role's scope alone.
       */
      readonly cognito: true;
      /** The tools a token's principal may call. @default - none */
      readonly tools?: OAuthConfig['tools'];
    };

/**
 * OAuth for one runner: the issuer the API function checks tokens against (as `TOOLRUNNER_OAUTH`), and with
 * `{ cognito: true }` the user pool, its resource server and scopes, an app client per role for client
 * credentials (each in an output, `<Role>ClientId`), and a domain whose prefix is derived from the stack, the
 * construct path and the account, so a redeploy gets the same one and another account deploying the same names
 * gets its own (prefixes are unique per region across AWS).
 */
export class RunnerOAuth extends Construct {
  /** The user pool the construct created, with `{ cognito: true }`. */
  readonly userPool?: cognito.UserPool;
  /** The app client agents obtain tokens with (client credentials), with `{ cognito: true }`: `clients.agent`. */
  readonly appClient?: cognito.UserPoolClient;
  /**
   * One app client per role (client credentials), with `{ cognito: true }`: each is allowed its role's scope
   * alone, so a token it obtains holds that role whatever scope it asks for. Give each caller its role's client.
   */
  readonly clients?: Readonly<Record<ToolRunnerRole, cognito.UserPoolClient>>;
  /** What the API function checks tokens against. */
  readonly config: Record<string, unknown>;

  constructor(
    scope: Construct,
    id: string,
    props: { oauth: ToolRunnerOAuth; apiUrl: string; api: LambdaFunction; removalPolicy: RemovalPolicy; domainPrefix?: string },
  ) {
    super(scope, id);
    if ('cognito' in props.oauth) {
      this.userPool = new cognito.UserPool(this, 'UserPool', {
        selfSignUpEnabled: false,
        removalPolicy: props.removalPolicy,
        passwordPolicy: { minLength: 14, requireDigits: true, requireLowercase: true, requireUppercase: true, requireSymbols: true },
        mfa: cognito.Mfa.REQUIRED,
        mfaSecondFactor: { sms: false, otp: true },
        featurePlan: cognito.FeaturePlan.PLUS,
        standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
      });
      const scopes = ROLES.map((role) => new cognito.ResourceServerScope({ scopeName: role, scopeDescription: `act as ${role}` }));
      const server = this.userPool.addResourceServer('ResourceServer', { identifier: 'toolrunner', scopes });
      // One client per role: a client-credentials request that names no scope gets every scope its client is
      // allowed ("If the client doesn't request any scopes, the authentication server uses all custom scopes
      // associated with the client": https://docs.aws.amazon.com/cognito/latest/developerguide/token-endpoint.html),
      // and roles merge from scopes, so one client allowed all four made every agent an admin.
      const pool = this.userPool;
      const clientFor = (role: ToolRunnerRole) => {
        const scope = cognito.OAuthScope.resourceServer(server, scopes[ROLES.indexOf(role)]);
        const client = pool.addClient(CLIENT_IDS[role], {
          generateSecret: true,
          authFlows: {},
          oAuth: { flows: { clientCredentials: true }, scopes: [scope] },
          accessTokenValidity: Duration.hours(1),
        });
        new CfnOutput(this, `${CLIENT_IDS[role]}Id`, {
          description: `The app client for callers with the ${role} role (client credentials, scope toolrunner/${role}); its secret is in the user pool`,
          value: client.userPoolClientId,
        });
        return client;
      };
      const clients = {
        agent: clientFor('agent'),
        approver: clientFor('approver'),
        reviewer: clientFor('reviewer'),
        admin: clientFor('admin'),
      };
      this.clients = clients;
      this.appClient = clients.agent;
      const domain = this.userPool.addDomain('Domain', { cognitoDomain: { domainPrefix: props.domainPrefix ?? domainPrefixOf(this) } });
      new CfnOutput(this, 'UserPoolId', {
        description: 'The user pool whose app clients hold the secrets',
        value: this.userPool.userPoolId,
      });
      new CfnOutput(this, 'TokenEndpoint', {
        description: 'Where each app client obtains access tokens (client credentials)',
        value: `${domain.baseUrl()}/oauth2/token`,
      });
      this.config = {
        issuer: this.userPool.userPoolProviderUrl,
        clientIds: ROLES.map((role) => clients[role].userPoolClientId),
        scopeRoles: Object.fromEntries(ROLES.map((role) => [`toolrunner/${role}`, [role]])),
        tools: props.oauth.tools ?? [],
      };
    } else {
      this.config = { ...props.oauth };
    }
    props.api.addEnvironment('TOOLRUNNER_OAUTH', Stack.of(this).toJsonString(this.config));
    new CfnOutput(this, 'ProtectedResourceMetadataUrl', {
      description: 'RFC 9728 protected-resource metadata: where OAuth clients find the authorization server',
      value: `${props.apiUrl}/.well-known/oauth-protected-resource`,
    });
    if (this.userPool)
      Validations.of(this.userPool).acknowledge({
        id: 'AwsSolutions-COG3',
        reason: 'Threat protection is on (full function, Plus plan); the check predates the featurePlan setting.',
      });
  }
}

/** The account's 12 digits and a hyphen, at the end of every derived prefix. */
const ACCOUNT_SUFFIX = 13;

/**
 * A Cognito domain prefix: lower case letters, digits and hyphens, at most 63, none of the words Cognito
 * reserves, stable for this construct in this stack (so `cdk destroy` then `cdk deploy` gets it again), and
 * ending in the account (resolved at deploy for an environment-agnostic stack).
 */
export function domainPrefixOf(scope: Construct): string {
  const unique = Names.uniqueResourceName(scope, { maxLength: 200, separator: '-' }).toLowerCase();
  const clean = unique
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/aws|amazon|cognito/g, 'x')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  const hash = clean.slice(-8);
  const name = `${clean.slice(0, 63 - ACCOUNT_SUFFIX - hash.length - 1).replace(/-$/, '')}-${hash}`.replace(/^-/, 'tr-');
  return `${name}-${Stack.of(scope).account}`;
}
