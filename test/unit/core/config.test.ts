import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema, withHashedKeys } from '../../../functions/core/config';

const principal = { id: 'alice', key: 'k'.repeat(24), roles: ['approver'], tools: [] };

describe('the config document', () => {
  it('defaults the approval time to live and accepts a minimal document', () => {
    const parsed = RunnerConfigSchema.parse({ principals: [principal], approvalSecret: 's'.repeat(16) });
    expect(parsed.approvalTtlSeconds).toBe(86400);
  });

  it('refuses a notify secret that opens something else, and origins that are not exact', () => {
    const reused = RunnerConfigSchema.safeParse({
      principals: [{ ...principal, notify: { webhookUrl: 'https://hooks.example.com/x', secret: 's'.repeat(16) } }],
      approvalSecret: 's'.repeat(16),
    });
    expect(reused.success).toBe(false);
    expect(JSON.stringify(reused.error?.issues)).toContain('notify.secret must be its own');
    expect(RunnerConfigSchema.safeParse({ principals: [], mcpAllowedOrigins: ['https://app.example.com/'] }).success).toBe(false);
    expect(RunnerConfigSchema.safeParse({ principals: [], mcpAllowedOrigins: ['https://app.example.com'] }).success).toBe(true);
  });

  it('bounds the approval time to live and the secret length', () => {
    expect(RunnerConfigSchema.safeParse({ principals: [], approvalTtlSeconds: 8 * 86400 }).success).toBe(false);
    expect(RunnerConfigSchema.safeParse({ principals: [], approvalSecret: 'short' }).success).toBe(false);
  });
});

describe('what the config document refuses at load, naming it', () => {
  const problems = (document: unknown) => {
    const parsed = RunnerConfigSchema.safeParse(document);
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('reserves the id prefix oauth: for token principals', () => {
    expect(problems({ principals: [{ ...principal, id: 'oauth:alice' }] })).toEqual([
      'principals.0.id: "oauth:alice": the id prefix oauth: is reserved for token principals (oauth:<claim>); choose another id',
    ]);
    expect(problems({ principals: [{ ...principal, id: 'oauth-alice' }] })).toEqual([]);
  });

  it('refuses two principals with one id', () => {
    const bob = { id: 'bob', oauthSubject: 'https://idp|bob', roles: ['agent'], tools: [] };
    expect(problems({ principals: [principal, bob, { ...principal, key: 'j'.repeat(24) }, { ...bob }] })).toEqual([
      'principals.2.id: another principal has the id "alice" (principals.0): ids must be unique',
      'principals.3.id: another principal has the id "bob" (principals.1): ids must be unique',
    ]);
  });

  it('refuses unknown top-level keys', () => {
    expect(problems({ principals: [], approvalTTLSeconds: 60, polices: 'x' })).toEqual([
      ': unknown config keys "approvalTTLSeconds", "polices" (docs/reference/config.md lists the settings)',
    ]);
  });
});

describe('hashed keys', () => {
  it('replace each key with its SHA-256 and keep the rest of the document', () => {
    const doc = {
      principals: [
        { id: 'a', key: 'tr_0123456789abcdefgh', roles: ['agent'], tools: '*' },
        { id: 'b', oauthSubject: 'https://idp|b', roles: ['reviewer'], tools: [] },
      ],
      approvalSecret: 's'.repeat(16),
    };
    const hashed = withHashedKeys(doc) as typeof doc & { principals: Record<string, unknown>[] };
    expect(hashed.principals[0]).toEqual({
      id: 'a',
      roles: ['agent'],
      tools: '*',
      keySha256: '482d21773343ae6be716cb3233b5d9bc4c92e86c280e0b8cede3467e0acc8402',
    });
    expect(hashed.principals[1]).toEqual(doc.principals[1]);
    expect(hashed.approvalSecret).toBe(doc.approvalSecret);
    expect(RunnerConfigSchema.safeParse(hashed).success).toBe(true);
    expect(() => withHashedKeys({ principals: [{ id: 'x' }] })).toThrow(/not a valid config document/);
  });

  it('refuse a principal with both a key and its hash, or a hash that is not hex SHA-256', () => {
    const both = { id: 'a', key: 'tr_0123456789abcdefgh', keySha256: 'a'.repeat(64), roles: ['agent'], tools: [] };
    expect(RunnerConfigSchema.safeParse({ principals: [both] }).success).toBe(false);
    expect(RunnerConfigSchema.safeParse({ principals: [{ id: 'a', keySha256: 'XYZ', roles: ['agent'], tools: [] }] }).success).toBe(false);
  });
});
