import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompactSign, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import Provider from 'oidc-provider';

/** The OAuth clients the test provider knows (client credentials, `client_secret_basic`). */
export const CLIENTS = {
  agent: { id: 'agent-bot', secret: 'agent-bot-secret-0123456789abcdef', scope: 'toolrunner/agent' },
  approver: { id: 'approver-bot', secret: 'approver-bot-secret-0123456789ab', scope: 'toolrunner/approver' },
} as const;

export interface TestIssuer {
  issuer: string;
  /** An access token from the token endpoint (client credentials), for `resource`. */
  token(client: keyof typeof CLIENTS, resource: string): Promise<string>;
  /**
   * A token signed with the issuer's own key (or `key`), with exactly these claims and header: for cases the provider will not issue.
   * `typ: null` leaves `typ` out of the header; `payloadText` signs that text as the payload instead of `claims` (numbers JSON.stringify cannot write).
   */
  mint(
    claims: JWTPayload,
    options?: { alg?: string; key?: CryptoKey | Uint8Array; typ?: string | null; payloadText?: string },
  ): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A real OpenID provider (the npm package `oidc-provider`) on loopback, issuing JWT access tokens (RFC 9068)
 * through client credentials for any resource indicator a client names, signed RS256 with a key of its own.
 */
export async function startTestIssuer(): Promise<TestIssuer> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-key-1';
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: Object.values(CLIENTS).map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: c.scope,
    })),
    jwks: { keys: [jwk] },
    scopes: ['openid', ...Object.values(CLIENTS).map((c) => c.scope)],
    ttl: { ClientCredentials: 600 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: Object.values(CLIENTS)
            .map((c) => c.scope)
            .join(' '),
          audience: resource,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    async token(client, resource) {
      const c = CLIENTS[client];
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${c.id}:${c.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: c.scope }),
      });
      const body = (await res.json()) as { access_token?: string; error?: string };
      if (!body.access_token) throw new Error(`no token from ${issuer}: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async mint(claims, { alg = 'RS256', key = privateKey, typ = 'at+jwt', payloadText } = {}) {
      const header = { alg, kid, ...(typ === null ? {} : { typ }) };
      if (payloadText !== undefined) return new CompactSign(new TextEncoder().encode(payloadText)).setProtectedHeader(header).sign(key);
      return new SignJWT({ iss: issuer, ...claims }).setProtectedHeader(header).sign(key);
    },
    stop: () => new Promise((r) => server.close(() => r())),
  };
}
