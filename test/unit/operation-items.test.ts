import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { type ArgumentSources, placeArguments } from '../../functions/adapters/dynamo-arguments';
import { fromItem, ITEM_FORMAT, toItem } from '../../functions/adapters/dynamo-operation-items';
import { fromBlockItem, packEvents, toBlockItem } from '../../functions/adapters/dynamo-trace-blocks';
import { canonicalJson, hashValue } from '../../functions/core/canonical';
import { envelopeFor } from '../../functions/core/envelope';
import { SCHEMA_VERSION, type OperationRecord, type Outcome } from '../../functions/core/model';
import type { TraceEvent } from '../../functions/core/trace';
import { ITEM_OVERHEAD_BYTES, itemBytes } from '../../bench/storage-cost';

/** Item bytes as DynamoDB bills a write: names and values, without the storage overhead. */
const writeBytes = (item: Record<string, unknown>) => itemBytes(marshall(item, { removeUndefinedValues: true })) - ITEM_OVERHEAD_BYTES;

/** Where arguments kept apart live in these tests: a map standing in for the operations table's items. */
function sources(): ArgumentSources & { stored: Map<string, string> } {
  const stored = new Map<string, string>();
  return {
    stored,
    blobs: undefined,
    items: {
      put: async (ref, text) => void stored.set(ref, text),
      get: async (ref) => stored.get(ref),
    },
    placed: new WeakMap(),
  };
}

/** Writes `op` as the store does (arguments placed first) and reads the item back through DynamoDB's own marshalling. */
async function roundTrip(op: OperationRecord) {
  const s = sources();
  const placed = placeArguments(op, undefined, s);
  await placed.write();
  const item = { ...toItem(op, placed.ref), writeId: 'w1' };
  const stored = unmarshall(marshall(item, { removeUndefinedValues: true }));
  return { item: stored, read: await fromItem(stored, s), sources: s };
}

const T0 = '2026-12-07T10:16:24.067Z';
const T1 = '2026-12-07T10:16:24.934Z';

function base(over: Partial<OperationRecord> = {}): OperationRecord {
  return {
    schemaVersion: SCHEMA_VERSION,
    operationId: 'op_MLzzhRG7FpscX5xQD9WT8bEoIi',
    runId: 'run_9CYyXTY5SVj36CL7',
    callId: 'c0',
    turn: 1,
    toolName: 'charge_card',
    principalId: 'agent',
    requestedBy: 'agent',
    state: 'executing',
    risk: 'irreversible_write',
    frozenArguments: '{"amount":1000,"currency":"USD","customer":"cus_1"}',
    inputHash: hashValue({ amount: 1000 }),
    idempotencyKey: `idk_${randomBytes(32).toString('base64url')}`,
    attempts: 1,
    createdAt: T0,
    updatedAt: T0,
    version: 1,
    resumes: 0,
    leaseUntil: '2026-12-07T10:17:27.067Z',
    deadlineAt: '2026-12-07T10:18:33.067Z',
    costCents: 1000,
    approvalRequired: false,
    plan: { next: 'execute' },
    attemptResumes: 0,
    attemptClaimed: true,
    expiresAtEpoch: 1799234184,
    traceSeqs: [120475582826688],
    ...over,
  };
}

/** The charge `npm run cost` sends by default: 1 KB of arguments, metadata values random (they compress as little as any). */
function defaultCharge() {
  const args = { amount: 1000, currency: 'USD', customer: 'cus_1', metadata: [] as { key: string; value: string }[] };
  for (let i = 0; Buffer.byteLength(JSON.stringify(args)) < 1024; i++) {
    const room = 1024 - Buffer.byteLength(JSON.stringify(args)) - 30;
    args.metadata.push({
      key: `k${i}`,
      value: randomBytes(375)
        .toString('base64url')
        .slice(0, Math.max(1, Math.min(500, room))),
    });
  }
  // As the sandbox answers it: the charge, its metadata kept (echoed) as the upstream's own object.
  const result = {
    id: 'ch_1',
    ...args,
    metadata: Object.fromEntries(args.metadata.map((m) => [m.key, m.value])),
    status: 'succeeded',
    idempotencyKey: 'idk_uIT6djv6an3qI0b0PWebOGG_ymGbdmkfwTBD2mvMKHc',
    created: T1,
  };
  return { frozen: canonicalJson(args), result: canonicalJson(result) };
}

function succeeded(op: OperationRecord, json: string): OperationRecord {
  const outcome: Outcome = {
    kind: 'succeeded',
    result: { bytes: Buffer.byteLength(json), sha256: `sha256:${createHash('sha256').update(json).digest('hex')}`, json },
    upstreamStatus: 200,
  };
  return {
    ...op,
    state: 'reported',
    version: 2,
    updatedAt: T1,
    leaseUntil: undefined,
    plan: { next: 'done' },
    outcome,
    lastAttempt: { attempt: 1, outcome: { kind: 'succeeded' }, latencyMs: 46, upstreamStatus: 200, finishedAt: T1 },
    envelope: envelopeFor(op, outcome),
    traceSeqs: [120475582826688, 120475586291840],
  };
}

/** Every shape a record takes on its way, each as the engine writes it. */
function shapes(): [string, OperationRecord][] {
  const charge = defaultCharge();
  const proposed = base({
    state: 'proposed',
    attempts: 0,
    frozenArguments: undefined,
    rawArguments: '{"amount": 1000}',
    plan: { next: 'validate' },
  });
  const approval = {
    approvalId: 'apr_1',
    state: 'pending' as const,
    expiresAt: '2026-12-08T10:16:24.067Z',
  };
  return [
    ['proposed, raw arguments inline', proposed],
    [
      'requested by an admin for another principal, a token grant',
      { ...proposed, requestedBy: 'admin', requesterGrant: { roles: ['agent'], tools: ['charge_card'], attributes: { team: 'x' } } },
    ],
    ['executing, 1 KB of arguments kept apart', base({ frozenArguments: charge.frozen })],
    ['raw arguments kept apart', { ...proposed, rawArguments: charge.frozen }],
    [
      'awaiting approval (in the pendingApprovals index)',
      base({ state: 'awaiting_approval', approvalRequired: true, approval, requestedBy: 'agent', policies: { call: ['p1'] } }),
    ],
    [
      'awaiting approval, requested by another',
      base({ state: 'awaiting_approval', approvalRequired: true, approval, requestedBy: 'admin' }),
    ],
    ['approval decided', base({ state: 'validated', approval: { ...approval, state: 'approved', decidedBy: 'approver', decidedAt: T1 } })],
    ['settled with a 1 KB result echoing its arguments', succeeded(base({ frozenArguments: charge.frozen }), charge.result)],
    ['settled with a small result', succeeded(base(), '{"id":"ch_1"}')],
    [
      'settled with a 4 KB result',
      succeeded(
        base({ toolName: 'get_order', frozenArguments: '{"orderId":"ord_1"}' }),
        JSON.stringify({ items: Array.from({ length: 60 }, (_, i) => ({ sku: `sku_${i}`, quantity: i })) }),
      ),
    ],
    [
      'settled with its result in the blob store',
      {
        ...succeeded(base(), '{}'),
        outcome: { kind: 'succeeded', result: { bytes: 900_000, sha256: hashValue({}), ref: 'results/op/r.json' } },
      },
    ],
    [
      'outcome unknown, open review (in the openReviews index)',
      base({
        state: 'outcome_unknown',
        inDoubtSince: 1,
        lastUnansweredAt: T1,
        review: { required: true, reason: 'timeout' },
        outcome: { kind: 'outcome_unknown', code: 'timeout_unknown', message: 'no answer' },
      }),
    ],
    [
      'retry planned',
      base({
        state: 'executing',
        plan: { next: 'retry', notBefore: T1 },
        lastAttempt: {
          attempt: 1,
          outcome: { kind: 'failed_retryable', code: 'upstream_unavailable', message: '503', upstreamStatus: 503 },
          latencyMs: 5,
          finishedAt: T1,
        },
        throttleWaits: 2,
        lockWaits: 1,
        rateSlots: { holder: 'h', keys: ['k'] },
      }),
    ],
    [
      'failed',
      {
        ...base({ state: 'reported', outcome: { kind: 'failed_permanent', code: 'permanent_failure', message: 'no' } }),
        envelope: envelopeFor(base(), { kind: 'failed_permanent', code: 'permanent_failure', message: 'no' }),
      },
    ],
    [
      'cancelled with a late outcome',
      base({
        state: 'cancelled',
        outcome: { kind: 'cancelled', code: 'cancelled', message: 'c' },
        lateOutcome: { kind: 'succeeded', result: { bytes: 2, sha256: hashValue({}), json: '{}' } },
      }),
    ],
    [
      'a record with no trace blocks and no expiry',
      base({ traceSeqs: undefined, expiresAtEpoch: undefined, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
    ],
  ];
}

describe('operation items', () => {
  it.each(shapes())('reads back exactly what it wrote: %s', async (_name, op) => {
    const { item, read } = await roundTrip(op);
    expect(item.schemaVersion).toBe(ITEM_FORMAT);
    expect(item.body).toBeInstanceOf(Uint8Array);
    expect(read).toEqual(JSON.parse(JSON.stringify(op)));
  });

  it('keeps as attributes what DynamoDB reads: key, conditions, TTL, and what an index holding the item sorts and filters by', async () => {
    const [, , , , pending, other] = shapes();
    const { item } = await roundTrip(other[1]);
    expect(item).toMatchObject({
      operationId: other[1].operationId,
      state: 'awaiting_approval',
      version: 1,
      traceSeqs: [120475582826688],
      expiresAtEpoch: 1799234184,
      approvalPendingKey: 'pending',
      createdAt: T0,
      principalId: 'agent',
      requestedBy: 'admin',
      approval: other[1].approval,
    });
    // The run's owner asked: `requestedBy` is left out, as the index's filter reads it (`attribute_not_exists`).
    expect(Object.keys((await roundTrip(pending[1])).item)).not.toContain('requestedBy');
    const review = (await roundTrip(shapes()[11][1])).item;
    expect(review).toMatchObject({ reviewOpenKey: 'open', updatedAt: T0 });
    // Out of every index: nothing but the key, the conditions' attributes, the TTL and the body.
    const settled = (await roundTrip(shapes()[8][1])).item;
    expect(Object.keys(settled).sort()).toEqual([
      'body',
      'expiresAtEpoch',
      'operationId',
      'schemaVersion',
      'state',
      'traceSeqs',
      'version',
      'writeId',
    ]);
  });

  it("the default scenario's settled records take one write unit with a 1 KB charge, two with a 4 KB order", async () => {
    // Before: 1,757 and 2,062 bytes (two and three units), the result gzipped apart and every field an attribute.
    for (let i = 0; i < 20; i++) {
      const charge = defaultCharge();
      const { item } = await roundTrip(succeeded(base({ frozenArguments: charge.frozen }), charge.result));
      expect(writeBytes(item)).toBeLessThanOrEqual(1024);
    }
    const order = JSON.stringify({
      id: 'ord_cost',
      items: Array.from({ length: 40 }, () => ({
        sku: `sku_${randomBytes(6).toString('base64url')}`,
        description: ['cotton shirt', 'steel water bottle', 'ceramic mug white'][Math.floor(Math.random() * 3)],
        quantity: 1 + Math.floor(Math.random() * 4),
        unitCents: 100 + Math.floor(Math.random() * 19_900),
      })),
    }).slice(0, 4096);
    const { item } = await roundTrip(succeeded(base({ toolName: 'get_order', frozenArguments: '{"orderId":"ord_cost"}' }), order));
    expect(writeBytes(item)).toBeLessThanOrEqual(2048);
  });

  it('reads items of format 2 (every field an attribute, hashes as bytes, a large result gzipped) and 1', async () => {
    const op = succeeded(base(), JSON.stringify({ filler: 'x'.repeat(2000) }));
    const result = op.outcome?.kind === 'succeeded' ? op.outcome.result! : undefined!;
    const v2 = {
      ...op,
      envelope: { status: 'succeeded' },
      requestedBy: undefined,
      lastAttempt: { attempt: 1, latencyMs: 46, upstreamStatus: 200, finishedAt: T1 },
      inputHash: Uint8Array.from(Buffer.from(op.inputHash.slice(7), 'hex')),
      idempotencyKey: Uint8Array.from(Buffer.from(op.idempotencyKey.slice(4), 'base64url')),
      outcome: {
        kind: 'succeeded',
        upstreamStatus: 200,
        result: {
          bytes: result.bytes,
          sha256: Uint8Array.from(Buffer.from(result.sha256.slice(7), 'hex')),
          jsonGzip: gzipSync(result.json!),
        },
      },
      writeId: 'w0',
    };
    const s = sources();
    expect(await fromItem(unmarshall(marshall(v2, { removeUndefinedValues: true })), s)).toEqual(JSON.parse(JSON.stringify(op)));

    // Format 2 with its arguments in an item of their own.
    const charge = defaultCharge();
    const ref = {
      field: 'frozenArguments',
      bytes: Buffer.byteLength(charge.frozen),
      sha256: `sha256:${createHash('sha256').update(charge.frozen).digest('hex')}`,
      ref: `${op.operationId}#arguments-frozen-x`,
      in: 'item',
    };
    s.stored.set(ref.ref, charge.frozen);
    const apart = await fromItem({ ...v2, frozenArguments: undefined, argumentsRef: ref }, s);
    expect(apart.frozenArguments).toBe(charge.frozen);

    // Format 1: the raw result in the outcome and again in the last attempt.
    const v1 = {
      ...base({ state: 'reported' }),
      schemaVersion: 1,
      outcome: { kind: 'succeeded', result: { id: 'ch_1' } },
      lastAttempt: { attempt: 1, outcome: { kind: 'succeeded', result: { id: 'ch_1' } }, latencyMs: 1, finishedAt: T1 },
    };
    const upgraded = await fromItem(v1, s);
    expect(upgraded.outcome).toMatchObject({ kind: 'succeeded', result: { json: '{"id":"ch_1"}' } });
    expect(upgraded.lastAttempt?.outcome).toEqual({ kind: 'succeeded' });
  });
});

describe('trace block items', () => {
  const events: TraceEvent[] = [
    {
      type: 'operation.proposed',
      to: 'proposed',
      detail: { toolName: 'charge_card', turn: 1, inputHash: hashValue({ a: 1 }), requestedBy: 'agent' },
    },
    { type: 'policy.decision', detail: { decision: 'allow', approval: 'not_required', risk: 'irreversible_write', costCents: 1000 } },
    { type: 'state.transition', from: 'proposed', to: 'validated' },
    { type: 'state.transition', from: 'validated', to: 'executing', attempt: 1 },
    { type: 'attempt.started', attempt: 1 },
  ].map((e, i) => ({ ...e, seq: 100 + i, at: T0, runId: 'run_1', operationId: 'op_1', callId: 'c0' }) as TraceEvent);

  it('keeps the key and TTL as attributes, the rest as one deflated body, and reads it back as packed', () => {
    const packed = packEvents(events, 'op_1');
    const item = unmarshall(marshall(toBlockItem(packed, 1799234184)));
    expect(Object.keys(item).sort()).toEqual(['body', 'expiresAtEpoch', 'runId', 'seq']);
    expect(fromBlockItem(item)).toEqual(packed);
    // Before: 597 bytes, every field an attribute.
    expect(writeBytes(item)).toBeLessThan(300);
  });

  it('reads blocks written before, every field an attribute', () => {
    const packed = packEvents(events, 'op_1');
    expect(fromBlockItem({ ...packed, expiresAtEpoch: 1 })).toEqual({ ...packed, expiresAtEpoch: 1 });
  });
});
