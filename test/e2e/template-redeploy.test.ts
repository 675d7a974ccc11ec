import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seeded } from '../../local/seeded';
import { ensureAssembly, readAssembly } from '../../local/template/assembly';
import { updateOrder } from '../../local/template/redeploy';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

const SEED = 7;
const LOCK = 'update_shipping_address:ord_1';

// Template mode only: a second cloud assembly applied over the running stack on SIGHUP, as `cdk deploy` of a
// change applies it over a deployed one. The second one is synthesized from its own app
// (test/fixtures/redeploy-app: the Api function's memory 256 → 512 MB, the demo tools without send_email).
describe.runIf(handlerMode === 'template')('an update applied over a running stack (SIGHUP)', () => {
  let stack: TestStack;
  let work: string;
  let live: string;
  let second: string;
  const lines: string[] = [];
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'toolrunner-redeploy-'));
    // The first version: the demo app's assembly (global setup synthesized it), where the stack reads it.
    live = join(work, 'live');
    cpSync(resolve('cdk.out'), live, { recursive: true });
    [{ dir: second }, stack] = await Promise.all([
      ensureAssembly({ root: 'test/fixtures/redeploy-app', outDir: join(work, 'next') }),
      startTestStack({ assemblyDir: live, onDeploy: (line) => lines.push(line), deploySeed: SEED }),
    ]);
  }, 420_000);
  afterAll(async () => {
    await stack?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Puts `assemblyDir` where the stack reads its assembly and sends SIGHUP; the lines that update printed, once it ends. */
  const applyUpdate = async (assemblyDir: string): Promise<string[]> => {
    const from = lines.length;
    rmSync(live, { recursive: true, force: true });
    cpSync(assemblyDir, live, { recursive: true });
    process.kill(process.pid, 'SIGHUP');
    return stack.api.until(
      'the update to finish',
      async () => lines.slice(from),
      (l) => l.includes('deploy: done') || l.some((x) => x.startsWith('deploy: failed')),
      300_000,
    );
  };

  /** A charge over the approval threshold, submitted without waiting, and its pending approval once listed. */
  const chargeAwaitingApproval = async (runId: string, callId: string, customer: string, amount: number) => {
    const { api, keys } = stack;
    const submitted = await api.call(
      keys.agent,
      runId,
      { callId, name: 'charge_card', arguments: { amount, currency: 'USD', customer } },
      0,
    );
    expect(submitted.status).toBe(202);
    const operationId = submitted.body.operationId as string;
    const approval = await api.until(
      'the approval request',
      async () =>
        ((await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver })).body.approvals ?? []).find(
          (a: { operationId: string }) => a.operationId === operationId,
        ),
      (found) => found !== undefined,
    );
    return { operationId, approval, link: new URL(approval.url) };
  };

  it('switches the functions in dependency order; a pending approval, a held lock and an unknown outcome end after it, once each', async () => {
    const { api, keys, sandbox } = stack;
    const runId = await api.createRun(keys.agent);
    const stateOf = async (operationId: string) => (await api.operation(keys.reviewer, operationId)).state as string;

    // A charge waiting for a person.
    const { operationId: bigId, approval, link } = await chargeAwaitingApproval(runId, 'call_big', 'cus_big', 60_000);

    // A shipping update waiting for its order's lock, which another holder keeps until after the update.
    expect(await stack.deps!.store.acquireLock(LOCK, 'op_holder', 600_000, Date.now())).toBe(true);
    const ship = await api.call(
      keys.agent,
      runId,
      {
        callId: 'call_ship',
        name: 'update_shipping_address',
        arguments: { orderId: 'ord_1', address: { line1: '1 Main Street', city: 'Springfield', postalCode: '10001', country: 'US' } },
      },
      0,
    );
    expect(ship.status).toBe(202);

    // A charge that committed but timed out, whose status lookups fail for a while: an unknown outcome waiting for a lookup.
    // Eight failures: the jittered backoffs between them (ceilings 1, 2, 4, 8, 16, 20, 20 s) keep it unknown for about
    // 35 s after the first, not the 0 to 3 s two failures gave, which a loaded machine could overtake before the update.
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 20_000 });
    await sandbox.fault({ route: 'GET /v1/charges', mode: 'fail_503', count: 8 });
    const unknown = await api.call(
      keys.agent,
      runId,
      { callId: 'call_unknown', name: 'charge_card', arguments: { amount: 2500, currency: 'USD', customer: 'cus_unknown' } },
      0,
    );
    expect(unknown.status).toBe(202);
    const ids = { big: bigId, ship: ship.body.operationId as string, unknown: unknown.body.operationId as string };

    await api.until(
      'the three calls in flight',
      () => api.trace(keys.agent, runId),
      (trace) =>
        trace.some((e) => e.operationId === ids.ship && e.type === 'backoff.scheduled' && e.detail?.reason === 'lock_busy') &&
        trace.some((e) => e.operationId === ids.unknown && e.type === 'reconcile.finished' && e.detail?.result === 'lookup_failed'),
      90_000,
    );
    expect(await stateOf(ids.big)).toBe('awaiting_approval');
    expect(await stateOf(ids.unknown)).toBe('outcome_unknown');
    expect(await stateOf(ids.ship)).not.toBe('reported');

    // The update: the second assembly where the stack reads its assembly, then SIGHUP.
    await applyUpdate(second);

    // Every function's code changed (its asset hash), the Api's memory too; no state machine, no secret changed.
    const next = readAssembly(live).template;
    const functions = Object.entries(next.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
      .map(([id]) => id);
    const switched = lines.filter((l) => l.endsWith(' switched')).map((l) => l.replace(/^deploy: (.*) switched$/, '$1'));
    expect(lines[0]).toMatch(
      new RegExp(
        `^deploy: applying .* \\(seed ${SEED}\\): ${functions.length} functions changed, 0 added, 0 removed, 0 state machines changed$`,
      ),
    );
    expect(lines.some((l) => l.includes('regenerated'))).toBe(false);
    expect(switched).toEqual(updateOrder(next, functions, seeded(SEED)));
    // Tools goes before every function that invokes it.
    const at = (name: string) => switched.findIndex((id) => id.startsWith(`Runner${name}Function`));
    for (const caller of ['Api', 'Execute', 'Reconcile']) expect(at('Tools')).toBeLessThan(at(caller));
    expect(lines.at(-1)).toBe('deploy: done');

    // Nothing that was in flight has ended yet but what could (the lookup retries on its own).
    expect(await stateOf(ids.big)).toBe('awaiting_approval');
    expect(await stateOf(ids.ship)).not.toBe('reported');

    // The approval link made before the update still decides (its page, then its signature).
    expect((await fetch(link)).status).toBe(200);
    const decided = await api.request('POST', `/v1/approvals/${approval.approvalId}`, {
      body: { decision: 'approve', sig: link.searchParams.get('sig') },
    });
    expect(decided.status).toBe(200);
    await stack.deps!.store.releaseLock(LOCK, 'op_holder');

    for (const [name, id] of Object.entries(ids)) {
      const op = await api.until(
        `${name} to be reported`,
        () => api.operation(keys.reviewer, id),
        (o) => o.state === 'reported',
        180_000,
      );
      expect({ name, status: op.envelope?.status }).toEqual({ name, status: 'succeeded' });
    }
    // 0 lost, 0 duplicated: each call's effect reached the upstream exactly once.
    const ledger = await sandbox.ledger();
    expect(ledger.map((e) => `${e.kind}:${e.kind === 'charge' ? e.body.customer : e.id}`).sort()).toEqual([
      'charge:cus_big',
      'charge:cus_unknown',
      'shipping_address:ord_1',
    ]);

    // New calls run on the second version: send_email is gone, and a call to it never runs.
    const tools = await api.request('GET', '/v1/tools', { key: keys.agent });
    expect((tools.body.tools as { name: string }[]).map((t) => t.name)).not.toContain('send_email');
    expect((tools.body.tools as { name: string }[]).map((t) => t.name)).toContain('charge_card');
    // Its own waits (90 s, 300 s, 3 × 180 s) bound it, not the suite's 60 s default: the unknown outcome alone stays
    // unknown for about 35 s by design.
  }, 900_000);

  // Across a restart on the new template, template-signing-key.test.ts proves it for approval links.
  it('a principals edit and another update keep every approval link, MCP session and console session', async () => {
    const { api, keys, sandbox } = stack;
    // Made before: an MCP session, a console session and a pending approval's link, all signed with the one key.
    const mcp = (body: unknown, sessionId?: string) =>
      fetch(`${stack.apiUrl}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${keys.agent}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sessionId ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } : {}),
        },
        body: JSON.stringify(body),
      });
    const opened = await mcp({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'redeploy-test', version: '1' } },
    });
    expect(opened.status).toBe(200);
    const sessionId = opened.headers.get('mcp-session-id');
    expect(sessionId).toBeTruthy();
    const listTools = async () => {
      const res = await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, sessionId!);
      return { status: res.status, text: await res.text() };
    };
    expect(await listTools()).toMatchObject({ status: 200, text: expect.stringContaining('charge_card') });
    const login = await fetch(`${stack.apiUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiUrl },
      body: new URLSearchParams({ key: keys.reviewer }),
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
    const consoleRuns = () => fetch(`${stack.apiUrl}/console/runs`, { headers: { cookie }, redirect: 'manual' });
    expect((await consoleRuns()).status).toBe(200);
    const runId = await api.createRun(keys.agent);
    const kept = await chargeAwaitingApproval(runId, 'call_kept', 'cus_kept', 61_000);

    // The principals change: a new agent, and the approver's key kept as its hash only.
    const newcomer = 'tr_redeploy_newcomer_key_0123456789';
    stack.editConfig((config) => {
      config.principals.push({ id: 'newcomer', key: newcomer, roles: ['agent'], tools: '*' });
      const approver = config.principals.find((p) => p.key === keys.approver)!;
      delete approver.key;
      approver.keySha256 = createHash('sha256').update(keys.approver).digest('hex');
    });
    // The update: the first version again (its functions change back), then SIGHUP.
    const update = await applyUpdate(resolve('cdk.out'));
    expect(update[0]).toMatch(/^deploy: applying .*: [1-9]\d* functions changed, 0 added, 0 removed, 0 state machines changed$/);
    expect(update.filter((l) => l.endsWith(' switched')).length).toBeGreaterThan(0);
    expect(update.at(-1)).toBe('deploy: done');
    expect(update.some((l) => l.includes('regenerated'))).toBe(false);
    // The principals change applies (functions keep their copy of the document up to 30 s).
    await api.until(
      'the newcomer to be let in',
      async () => (await api.request('POST', '/v1/runs', { key: newcomer, body: {} })).status,
      (status) => status === 201,
      90_000,
    );

    // Everything made before still answers: the MCP session, the console session, the approval link.
    expect(await listTools()).toMatchObject({ status: 200, text: expect.stringContaining('send_email') });
    const runsPage = await consoleRuns();
    expect(runsPage.status).toBe(200);
    expect(await runsPage.text()).toContain(runId);
    expect((await fetch(kept.link)).status).toBe(200);
    const decided = await api.request('POST', `/v1/approvals/${kept.approval.approvalId}`, {
      body: { decision: 'approve', sig: kept.link.searchParams.get('sig') },
    });
    expect(decided.status).toBe(200);
    const op = await api.until(
      'the kept charge to be reported',
      () => api.operation(keys.reviewer, kept.operationId),
      (o) => o.state === 'reported',
      120_000,
    );
    expect(op.envelope?.status).toBe('succeeded');
    expect((await sandbox.ledger()).filter((e) => e.kind === 'charge' && e.body.customer === 'cus_kept')).toHaveLength(1);
  }, 600_000);
});
