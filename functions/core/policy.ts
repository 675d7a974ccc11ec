import type { RunnerConfig } from './config';
import type { OperationRecord, Principal, Role } from './model';
import { isOwnOperation } from './record-predicates';

export function hasRole(principal: Principal, role: Role): boolean {
  return principal.roles.includes(role) || principal.roles.includes('admin');
}

/** Authorization: may this principal call this tool at all? Checked at validation and before every attempt. */
export function mayCallTool(principal: Principal | undefined, toolName: string): boolean {
  if (!principal || !hasRole(principal, 'agent')) return false;
  return principal.tools === '*' || principal.tools.includes(toolName);
}

/** May this principal decide this operation's approval? An approver, and never for its own operation. */
export function mayApprove(principal: Principal, op: Pick<OperationRecord, 'requestedBy' | 'principalId'>): boolean {
  return hasRole(principal, 'approver') && !isOwnOperation(principal.id, op);
}

type PrincipalEntry = RunnerConfig['principals'][number];

/** The first principal of a configuration already read that `matches`, as the runner uses it: without its key. */
export function findPrincipal(
  config: Pick<RunnerConfig, 'principals'>,
  matches: (entry: PrincipalEntry) => boolean,
): Principal | undefined {
  const entry = config.principals.find(matches);
  return entry && { id: entry.id, roles: entry.roles, tools: entry.tools, ...(entry.attributes ? { attributes: entry.attributes } : {}) };
}

/** The principal with this id in a configuration already read (one read per step, not one per lookup). */
export function principalIn(config: Pick<RunnerConfig, 'principals'>, id: string): Principal | undefined {
  return findPrincipal(config, (p) => p.id === id);
}
