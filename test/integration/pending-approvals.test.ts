import { randomBytes } from 'node:crypto';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeDocumentClient, makeDynamoStore, type Store } from '../../functions/adapters/dynamo-store';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { makeApp } from '../../functions/api/app';
import { createClient } from '../../functions/client';
import { SCHEMA_VERSION } from '../../functions/core/model';
import type { Deps } from '../../functions/steps/deps';
import { ensureTables, localClient } from '../../local/dynamodb-local';
import { idleLifecycle } from '../support/memory-store';

const client = localClient(inject('dynamoEndpoint'));
const doc = makeDocumentClient(client);
let tables: TableNames;
let store: Store;
const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const approverKey = `tr_${randomBytes(18).toString('base64url')}`;

/** An operation waiting for approval, written straight into the table (the lifecycle is not under test here). */
function pendingItem(i: number, requester: string, expiresAt: string) {
  const operationId = `op_${String(i).padStart(4, '0')}${randomBytes(8).toString('hex')}`;
  const createdAt = new Date(NOW - 3_600_000 + i * 1000).toISOString();
  return {
    schemaVersion: SCHEMA_VERSION,
    operationId,
    runId: `run_${i}`,
    callId: `call_${i}`,
    turn: 1,
    toolName: 'charge_card',
    principalId: requester,
    state: 'awaiting_approval',
    rawArguments: { amount: 60_000 + i },
    frozenArguments: JSON.stringify({ amount: 60_000 + i }),
    inputHash: `sha256:${i}`,
    idempotencyKey: `idk_${i}`,
    attempts: 0,
    createdAt,
    updatedAt: createdAt,
    version: 3,
    resumes: 0,
    leaseUntil: expiresAt,
    approval: { approvalId: `apr_${operationId.slice(3)}`, state: 'pending', expiresAt },
    approvalPendingKey: 'pending',
  };
}

const visible = new Set<string>();
/** The approver's own pending requests: hidden from it, listed to the sweeper and the overview. */
const own = new Set<string>();

beforeAll(async () => {
  const prefix = `pa${randomBytes(4).toString('hex')}`;
  tables = Object.fromEntries(Object.keys(TABLE_ENV).map((id) => [id, `${prefix}-${id}`])) as TableNames;
  await ensureTables(client, tables);
  store = makeDynamoStore(doc, tables);
  const later = new Date(NOW + 86_400_000).toISOString();
  const earlier = new Date(NOW - 1000).toISOString();
  // 300 the approver may decide, interleaved with 60 it may not see: its own requests and expired ones.
  const items = [];
  for (let i = 0; i < 360; i++) {
    const kind = i % 6 === 1 ? 'own' : i % 6 === 4 ? 'expired' : 'visible';
    const item = pendingItem(i, kind === 'own' ? 'approver' : 'agent', kind === 'expired' ? earlier : later);
    if (kind === 'visible') visible.add(item.operationId);
    if (kind === 'own') own.add(item.operationId);
    items.push(item);
  }
  expect(visible.size).toBe(240);
  // 60 more visible ones, so the approver has exactly 300 to see.
  for (let i = 360; i < 420; i++) {
    const item = pendingItem(i, 'agent', later);
    visible.add(item.operationId);
    items.push(item);
  }
  for (let i = 0; i < items.length; i += 25) {
    await doc.send(
      new BatchWriteCommand({ RequestItems: { [tables.operations]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }),
    );
  }
});
afterAll(() => client.destroy());

function appFor(): ReturnType<typeof makeApp> {
  const deps: Deps = {
    store,
    tools: new Map(),
    config: async () => ({
      principals: [{ id: 'approver', key: approverKey, roles: ['approver'], tools: [] }],
      approvalSecret: 'p'.repeat(32),
      approvalTtlSeconds: 86400,
    }),
    lifecycle: idleLifecycle,
    notifier: { approvalRequested: async () => undefined },
    now: () => NOW,
    random: Math.random,
    publicBaseUrl: 'http://127.0.0.1:1',
  };
  return makeApp(deps);
}

describe('pending approvals, paged inside the query', () => {
  it('hands every one of 300 pending approvals to an approver across pages, none twice, without its own or expired ones', async () => {
    const seen: string[] = [];
    let after: Record<string, string> | undefined;
    let pages = 0;
    do {
      const page = await store.listPendingApprovals({ approverId: 'approver', now: new Date(NOW).toISOString(), limit: 70, after });
      expect(page.items.length).toBeLessThanOrEqual(70);
      seen.push(...page.items.map((op) => op.operationId));
      after = page.nextKey;
      pages++;
    } while (after && pages < 20);
    expect(seen).toHaveLength(300);
    expect(new Set(seen)).toEqual(visible);
    expect(pages).toBe(5);
  });

  it("lists every unexpired pending approval, the approver's own too, when asked for no approver (null)", async () => {
    const seen: string[] = [];
    let after: Record<string, string> | undefined;
    let pages = 0;
    do {
      const page = await store.listPendingApprovals({ approverId: null, now: new Date(NOW).toISOString(), limit: 100, after });
      seen.push(...page.items.map((op) => op.operationId));
      after = page.nextKey;
      pages++;
    } while (after && pages < 20);
    expect(own.size).toBe(60);
    expect(seen).toHaveLength(360);
    expect(new Set(seen)).toEqual(new Set([...visible, ...own]));
  });

  it('GET /v1/approvals pages with an opaque cursor and refuses one it did not hand out', async () => {
    const app = appFor();
    const auth = { authorization: `Bearer ${approverKey}` };
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await app.request(`/v1/approvals?status=pending&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: auth });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { approvals: { operationId: string; requestedBy: string; url: string }[]; nextCursor?: string };
      seen.push(...body.approvals.map((a) => a.operationId));
      expect(body.approvals.every((a) => a.requestedBy !== 'approver' && a.url.includes('sig='))).toBe(true);
      cursor = body.nextCursor;
      if (!cursor) break;
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    expect(seen).toHaveLength(300);
    expect(new Set(seen)).toEqual(visible);

    for (const bad of [
      'not-a-cursor',
      Buffer.from('{"approvalPendingKey":"pending"}').toString('base64url'),
      Buffer.from('null').toString('base64url'),
      'x'.repeat(5000),
    ]) {
      const res = await app.request(`/v1/approvals?cursor=${bad}`, { headers: auth });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    for (const limit of ['0', '101', '-1', '1e2', 'abc', '9'.repeat(400)]) {
      expect((await app.request(`/v1/approvals?limit=${limit}`, { headers: auth })).status).toBe(400);
    }
  });

  it("the client's listApprovals follows the pages to the end: every one of the 300, once each", async () => {
    const app = appFor();
    const fetched: string[] = [];
    const client = createClient({
      baseUrl: 'http://runner.test',
      apiKey: approverKey,
      fetch: async (url, init) => {
        fetched.push(String(url));
        return app.request(String(url), init as RequestInit);
      },
    });
    const approvals = await client.listApprovals();
    expect(approvals.map((a) => a.operationId)).toHaveLength(300);
    expect(new Set(approvals.map((a) => a.operationId))).toEqual(visible);
    // Three pages of 100; only the first without a cursor.
    expect(fetched.length).toBeGreaterThanOrEqual(3);
    expect(fetched.filter((u) => !u.includes('cursor='))).toHaveLength(1);
  });
});
