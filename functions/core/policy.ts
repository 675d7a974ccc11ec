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

/** The id prefix of a principal a token names that no config entry maps (`oauth:<claim>`); config ids may not use it. */
export const TOKEN_PRINCIPAL_PREFIX = 'oauth:';

export function isTokenPrincipal(id: string): boolean {
  return id.startsWith(TOKEN_PRINCIPAL_PREFIX);
}

/** What a decision reads of a principal besides its id. */
export type PrincipalGrant = Pick<Principal, 'roles' | 'tools' | 'attributes'>;

/**
 * The principal a decision uses, for every door (submission, preview, the re-check before an attempt, approval
 * links and decisions), whatever the credential: one object with roles, tools and attributes. A config
 * principal (reached by key, keySha256 or a token its `oauthSubject` names) as the config says now, so a
 * removed or changed entry counts at the next decision; a token principal (`oauth:<claim>`), which no config
 * holds, as it was authenticated: `asAuthenticated` is the request's own principal, or what the operation
 * (`requesterGrant`) or the signed link kept of it. Undefined, so refused, when there is neither.
 */
export function decidingPrincipal(
  config: Pick<RunnerConfig, 'principals'>,
  id: string,
  asAuthenticated?: PrincipalGrant,
): Principal | undefined {
  if (!isTokenPrincipal(id)) return principalIn(config, id);
  if (!asAuthenticated) return undefined;
  const { roles, tools, attributes } = asAuthenticated;
  return { id, roles, tools, ...(attributes ? { attributes } : {}) };
}

/** What an operation keeps of its requester for the decisions after submission: a token principal's grant only. */
export function requesterGrantOf(requester: Principal): Pick<OperationRecord, 'requesterGrant'> {
  if (!isTokenPrincipal(requester.id)) return {};
  const { roles, tools, attributes } = requester;
  return { requesterGrant: { roles, tools, ...(attributes ? { attributes } : {}) } };
}
