import { describe, expect, it } from 'vitest';
import { OAuthSchema } from '../../../functions/core/config';
import { looksLikeJwt, principalForClaims, scopesOf, tokenRefusal } from '../../../functions/core/oauth-principal';
import { findPrincipal } from '../../../functions/core/policy';

const resource = ['https://runner.example.com', 'https://runner.example.com/mcp'];
const oauth = OAuthSchema.parse({
  issuer: 'https://idp.example.com',
  scopeRoles: { 'toolrunner/agent': ['agent'], 'toolrunner/admin': ['admin'] },
  rolesClaim: 'roles',
  tools: ['get_order'],
});
const config = {
  principals: [{ id: 'billing', oauthSubject: 'https://idp.example.com|svc-1', roles: ['agent' as const], tools: '*' as const }],
};
const exp = Math.floor(Date.UTC(2030, 0, 1) / 1000);

describe('what a verified token means', () => {
  it('is for this resource when its aud names it, or when a listed client is named in client_id (Cognito)', () => {
    expect(tokenRefusal({ exp, aud: 'https://runner.example.com' }, oauth, resource)).toBeUndefined();
    expect(tokenRefusal({ exp, aud: ['x', 'https://runner.example.com/mcp'] }, oauth, resource)).toBeUndefined();
    expect(tokenRefusal({ exp, aud: 'https://other.example.com' }, oauth, resource)).toMatch(/not issued for this resource/);
    expect(tokenRefusal({ exp, client_id: 'app-1', token_use: 'access' }, { ...oauth, clientIds: ['app-1'] }, resource)).toBeUndefined();
    expect(tokenRefusal({ exp, client_id: 'app-2', token_use: 'access' }, { ...oauth, clientIds: ['app-1'] }, resource)).toBeDefined();
    expect(tokenRefusal({ exp, aud: 'api://runner' }, { ...oauth, audience: 'api://runner' }, resource)).toBeUndefined();
    expect(tokenRefusal({ exp, aud: 'https://runner.example.com' }, { ...oauth, audience: 'api://runner' }, resource)).toBeDefined();
  });

  it('checks the audience also when clientIds is set: only a Cognito access token without aud names its client instead', () => {
    const cognito = { ...oauth, clientIds: ['app-1'] };
    // RFC 9068 tokens always carry client_id: one minted for another API must not pass on it.
    expect(tokenRefusal({ exp, aud: 'https://other.example.com', client_id: 'app-1' }, cognito, resource)).toMatch(
      /not issued for this resource/,
    );
    expect(
      tokenRefusal({ exp, aud: 'https://other.example.com', client_id: 'app-1', token_use: 'access' }, cognito, resource),
    ).toBeDefined();
    expect(tokenRefusal({ exp, aud: 'https://runner.example.com', client_id: 'app-1' }, cognito, resource)).toBeUndefined();
    // Without aud: an access token (token_use) of a listed client, and nothing else.
    expect(tokenRefusal({ exp, client_id: 'app-1', token_use: 'access' }, cognito, resource)).toBeUndefined();
    expect(tokenRefusal({ exp, client_id: 'app-1' }, cognito, resource)).toBeDefined();
    expect(tokenRefusal({ exp, client_id: 'app-1', token_use: 'access' }, oauth, resource)).toBeDefined();
  });

  it('takes an aud of strings only, a finite exp, and typ at+jwt or none', () => {
    const ok = { exp, aud: 'https://runner.example.com' };
    for (const aud of [[['https://runner.example.com']], { 0: 'https://runner.example.com' }, ['https://runner.example.com', 1], 7, null])
      expect(tokenRefusal({ ...ok, aud }, oauth, resource), JSON.stringify(aud)).toMatch(/aud/);
    for (const bad of [Number.POSITIVE_INFINITY, Number.NaN, '2030', undefined])
      expect(tokenRefusal({ ...ok, exp: bad }, oauth, resource), String(bad)).toMatch(/exp/);
    expect(tokenRefusal({ ...ok, nbf: Number.NEGATIVE_INFINITY }, oauth, resource)).toMatch(/nbf/);
    for (const typ of [undefined, 'at+jwt', 'AT+JWT', 'application/at+jwt'])
      expect(tokenRefusal(ok, oauth, resource, { typ }), String(typ)).toBeUndefined();
    for (const typ of ['JWT', 'jwt', 'JOSE', 'id+jwt', '', 1])
      expect(tokenRefusal(ok, oauth, resource, { typ }), String(typ)).toMatch(/typ/);
  });

  it('is never an ID token', () => {
    for (const claims of [{ token_use: 'id' }, { nonce: 'n' }, { at_hash: 'h' }])
      expect(tokenRefusal({ exp, aud: 'https://runner.example.com', ...claims }, oauth, resource)).toMatch(/ID token/);
  });

  it('names the mapped principal of the document, else oauth:<claim> with roles from claims and scopes', () => {
    expect(principalForClaims(config, oauth, { iss: 'https://idp.example.com', sub: 'svc-1', scope: 'toolrunner/admin' })).toEqual({
      id: 'billing',
      roles: ['agent'],
      tools: '*',
    });
    expect(
      principalForClaims(config, oauth, {
        iss: 'https://idp.example.com',
        sub: 'svc-2',
        scope: 'toolrunner/agent other',
        roles: ['reviewer', 'root'],
      }),
    ).toEqual({
      id: 'oauth:svc-2',
      roles: ['reviewer', 'agent'],
      tools: ['get_order'],
    });
    expect(principalForClaims(config, oauth, { iss: 'https://idp.example.com' })).toBeUndefined();
    expect(principalForClaims(config, { ...oauth, principalClaim: 'email' }, { iss: 'i', sub: 's', email: 'a@b.c' })?.id).toBe(
      'oauth:a@b.c',
    );
  });

  it('gives a token of the Cognito agent client (scope toolrunner/agent) the agent role alone', () => {
    // The construct's mapping with `oauth: { cognito: true }` (infra/oauth.ts): each role's scope grants that role.
    const cognito = OAuthSchema.parse({
      issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_pool',
      clientIds: ['agent-client', 'admin-client'],
      scopeRoles: Object.fromEntries(['agent', 'approver', 'reviewer', 'admin'].map((role) => [`toolrunner/${role}`, [role]])),
    });
    const token = { iss: cognito.issuer, sub: 'agent-client', client_id: 'agent-client', token_use: 'access', exp };
    expect(tokenRefusal(token, cognito, resource)).toBeUndefined();
    expect(principalForClaims({ principals: [] }, cognito, { ...token, scope: 'toolrunner/agent' })).toEqual({
      id: 'oauth:agent-client',
      roles: ['agent'],
      tools: [],
    });
    // Roles merge from scopes: a token holding every scope (one client allowed all four) was admin.
    const all = 'toolrunner/agent toolrunner/approver toolrunner/reviewer toolrunner/admin';
    expect(principalForClaims({ principals: [] }, cognito, { ...token, scope: all })?.roles).toEqual([
      'agent',
      'approver',
      'reviewer',
      'admin',
    ]);
  });

  it('reaches the very principal object a key reaches: id, roles, tools and attributes', () => {
    const document = {
      principals: [
        {
          id: 'suspended',
          key: 'k'.repeat(24),
          oauthSubject: 'https://idp.example.com|svc-9',
          roles: ['agent' as const],
          tools: ['charge_card'],
          attributes: { tier: 'suspended', customers: ['cus_1'] },
        },
      ],
    };
    const byToken = principalForClaims(document, oauth, { iss: 'https://idp.example.com', sub: 'svc-9' });
    expect(byToken).toEqual(findPrincipal(document, (p) => p.key === 'k'.repeat(24)));
    expect(byToken?.attributes).toEqual({ tier: 'suspended', customers: ['cus_1'] });
  });

  it('reads scopes from scope or scp, and tells a JWT from a key', () => {
    expect(scopesOf({ scope: 'a b' })).toEqual(['a', 'b']);
    expect(scopesOf({ scp: ['a'] })).toEqual(['a']);
    expect(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).toBe(true);
    expect(looksLikeJwt('tr_agent_key_0123456789abcdef')).toBe(false);
  });
});
