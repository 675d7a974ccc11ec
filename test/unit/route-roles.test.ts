import { describe, expect, it } from 'vitest';
import { makeApp } from '../../functions/api/app';
import { createRun } from '../../functions/commands/submit';
import type { RunnerConfig } from '../../functions/core/config';
import type { Principal, Role } from '../../functions/core/model';
import type { Deps } from '../../functions/core/ports';
import { makeRegistry } from '../../functions/core/tool-spec';
import { idleLifecycle, memoryStore } from '../support/memory-store';
import { operation } from '../support/records';

/**
 * The roles the OpenAPI document states for each route are the ones the app enforces: every route the app
 * serves is probed, as documented, by a principal holding none of its roles (refused 403, before any body is
 * read) and by one holding each role (not refused), against a run and an operation owned by an agent.
 */

const ROLES: Role[] = ['agent', 'approver', 'reviewer', 'admin'];
const keyOf = (id: string) => `key-${id}`.padEnd(16, '-');
const OWNER: Principal = { id: 'owner', roles: ['agent'], tools: '*' };

/** A fresh app per request: a probe that cancels or creates leaves nothing behind for the next. */
async function world(principals: Principal[]) {
  const clock = Date.parse('2026-12-02T12:00:00Z');
  const store = memoryStore(() => clock);
  const config = {
    principals: [OWNER, ...principals.filter((p) => p.id !== OWNER.id)].map((p) => ({ ...p, key: keyOf(p.id) })),
    approvalSecret: 's'.repeat(32),
    approvalTtlSeconds: 600,
  } as RunnerConfig & { approvalSecret: string };
  const deps: Deps = {
    store,
    tools: makeRegistry([]),
    config: async () => config,
    lifecycle: idleLifecycle,
    notifier: { approvalRequested: async () => undefined },
    now: () => clock,
    random: () => 0.5,
    publicBaseUrl: 'http://runner',
  };
  const run = await createRun(deps, OWNER, undefined);
  const op = operation({ operationId: 'op_owned', runId: run.runId, principalId: OWNER.id });
  store.ops.set(op.operationId, op);
  return { app: makeApp(deps), runId: run.runId, operationId: op.operationId };
}

type Documented = Record<string, Record<string, { description: string; security?: unknown[] }>>;

async function documentedRoutes(): Promise<Documented> {
  const { app } = await world([]);
  return ((await (await app.request('/v1/openapi.json')).json()) as { paths: Documented }).paths;
}

/** Every route the app serves, in the document's form (`{name}` parameters). */
async function servedRoutes(): Promise<{ method: string; path: string }[]> {
  const { app } = await world([]);
  const seen = new Set(
    app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`),
  );
  return [...seen].map((key) => {
    const [method, path] = key.split(' ');
    return { method, path };
  });
}

/** The roles a documented operation states ("Roles: agent, reviewer (…)"), or undefined for a route without a bearer key. */
function rolesOf(op: { description: string; security?: unknown[] }): Role[] | undefined {
  if (Array.isArray(op.security) && op.security.length === 0) return undefined;
  const match = op.description.match(/^Roles: ([a-z, ]+) \(/);
  if (!match) throw new Error(`no roles documented: ${op.description}`);
  return match[1].split(', ') as Role[];
}

async function probe(method: string, path: string, caller: Principal, body: string) {
  const { app, runId, operationId } = await world([caller]);
  const url = path.replace('{runId}', runId).replace('{operationId}', operationId);
  const response = await app.request(url, {
    method: method.toUpperCase(),
    headers: { authorization: `Bearer ${keyOf(caller.id)}`, 'content-type': 'application/json', prefer: 'wait=0' },
    ...(method === 'post' ? { body } : {}),
  });
  return { status: response.status, body: await response.text() };
}

describe('the roles each route enforces', async () => {
  const documented = await documentedRoutes();
  const served = await servedRoutes();

  it('documents every served route with its method and path, and serves every documented one', () => {
    const documentedKeys = Object.entries(documented).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(served.map((r) => `${r.method} ${r.path}`).sort()).toEqual(documentedKeys.sort());
  });

  // A route served but not documented fails the first test; here it is left out rather than guessed.
  const bearerRoutes = served.flatMap(({ method, path }) => {
    const op = documented[path]?.[method];
    const roles = op && rolesOf(op);
    return roles ? [{ method, path, roles }] : [];
  });

  it('documents roles on every route that takes a bearer key', () => {
    expect(bearerRoutes.length).toBe(19);
    for (const { roles } of bearerRoutes) expect(roles.every((r) => ROLES.includes(r))).toBe(true);
  });

  it.each(bearerRoutes)('$method $path refuses a caller holding none of $roles, whatever the body', async ({ method, path, roles }) => {
    const outsider: Principal = { id: 'outsider', roles: ROLES.filter((r) => r !== 'admin' && !roles.includes(r)), tools: '*' };
    const answer = await probe(method, path, outsider, '{ not json');
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).error.code).toBe('forbidden');
  });

  it.each(bearerRoutes)('$method $path lets a caller holding one of $roles, or admin, through', async ({ method, path, roles }) => {
    for (const role of new Set<Role>([...roles, 'admin'])) {
      // An agent's routes are about its own records: the owner holds the agent role.
      const caller: Principal = role === 'agent' ? OWNER : { id: `holder-${role}`, roles: [role], tools: '*' };
      const answer = await probe(method, path, caller, '');
      expect([401, 403], `${role}: ${answer.body}`).not.toContain(answer.status);
    }
  });

  it('answers a request without a bearer key 401 exactly on the routes documented as needing one', async () => {
    const { app, runId, operationId } = await world([]);
    for (const { method, path } of served) {
      const url = path.replace('{runId}', runId).replace('{operationId}', operationId).replace('{approvalId}', 'apr_x');
      const status = (await app.request(url, { method: method.toUpperCase() })).status;
      const op = documented[path]?.[method];
      expect(op, `${method} ${path} is documented`).toBeDefined();
      const needsKey = rolesOf(op!) !== undefined;
      expect(status === 401, `${method} ${path}: ${status}`).toBe(needsKey);
    }
  });
});
