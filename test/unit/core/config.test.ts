import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../../functions/core/config';

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
