import type { Principal, Role } from './model';

export function hasRole(principal: Principal, role: Role): boolean {
  return principal.roles.includes(role) || principal.roles.includes('admin');
}

/** Authorization: may this principal call this tool at all? Checked at validation and before every attempt. */
export function mayCallTool(principal: Principal | undefined, toolName: string): boolean {
  if (!principal || !hasRole(principal, 'agent')) return false;
  return principal.tools === '*' || principal.tools.includes(toolName);
}
