import { describe, expect, it } from 'vitest';
import { OAuthSchema } from '../../../functions/core/config';
import { looksLikeJwt, principalForClaims, scopesOf, tokenRefusal } from '../../../functions/core/oauth-principal';

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

describe('what a verified token means', () => {
  it('is for this resource when its aud names it, or when a listed client is named in client_id (Cognito)', () => {
    expect(tokenRefusal({ aud: 'https://runner.example.com' }, oauth, resource)).toBeUndefined();
    expect(tokenRefusal({ aud: ['x', 'https://runner.example.com/mcp'] }, oauth, resource)).toBeUndefined();
    expect(tokenRefusal({ aud: 'https://other.example.com' }, oauth, resource)).toMatch(/not issued for this resource/);
    expect(tokenRefusal({ client_id: 'app-1', token_use: 'access' }, { ...oauth, clientIds: ['app-1'] }, resource)).toBeUndefined();
    expect(tokenRefusal({ client_id: 'app-2', token_use: 'access' }, { ...oauth, clientIds: ['app-1'] }, resource)).toBeDefined();
    expect(tokenRefusal({ aud: 'api://runner' }, { ...oauth, audience: 'api://runner' }, resource)).toBeUndefined();
    expect(tokenRefusal({ aud: 'https://runner.example.com' }, { ...oauth, audience: 'api://runner' }, resource)).toBeDefined();
  });

  it('is never an ID token', () => {
    for (const claims of [{ token_use: 'id' }, { nonce: 'n' }, { at_hash: 'h' }])
      expect(tokenRefusal({ aud: 'https://runner.example.com', ...claims }, oauth, resource)).toMatch(/ID token/);
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

  it('reads scopes from scope or scp, and tells a JWT from a key', () => {
    expect(scopesOf({ scope: 'a b' })).toEqual(['a', 'b']);
    expect(scopesOf({ scp: ['a'] })).toEqual(['a']);
    expect(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).toBe(true);
    expect(looksLikeJwt('tr_agent_key_0123456789abcdef')).toBe(false);
  });
});
