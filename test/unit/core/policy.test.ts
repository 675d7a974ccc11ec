import { describe, expect, it } from 'vitest';
import { findPrincipal, hasRole, mayApprove, mayCallTool, principalIn } from '../../../functions/core/policy';

const agent = { id: 'agent', roles: ['agent' as const], tools: ['get_order'] };
const admin = { id: 'root', roles: ['admin' as const], tools: '*' as const };
const approver = { id: 'alice', roles: ['approver' as const], tools: [] };

describe('policy', () => {
  it('admins hold every role', () => {
    expect(hasRole(admin, 'approver')).toBe(true);
    expect(hasRole(agent, 'approver')).toBe(false);
  });

  it('an agent calls only the tools of its list', () => {
    expect(mayCallTool(agent, 'get_order')).toBe(true);
    expect(mayCallTool(agent, 'charge_card')).toBe(false);
    expect(mayCallTool(admin, 'charge_card')).toBe(true);
    expect(mayCallTool(approver, 'get_order')).toBe(false);
    expect(mayCallTool(undefined, 'get_order')).toBe(false);
  });

  it('an approver never decides its own operation or one of its own run', () => {
    expect(mayApprove(approver, { principalId: 'agent', requestedBy: 'agent' })).toBe(true);
    expect(mayApprove(approver, { principalId: 'alice', requestedBy: 'agent' })).toBe(false);
    expect(mayApprove(approver, { principalId: 'agent', requestedBy: 'alice' })).toBe(false);
    expect(mayApprove(agent, { principalId: 'x' })).toBe(false);
  });

  it('finds principals without handing out their keys', () => {
    const config = {
      principals: [
        { ...agent, key: 'k1' },
        { ...approver, key: 'k2' },
      ],
    };
    expect(principalIn(config, 'alice')).toEqual(approver);
    expect(principalIn(config, 'nobody')).toBeUndefined();
    expect(findPrincipal(config, (p) => p.key === 'k1')).not.toHaveProperty('key');
  });
});
