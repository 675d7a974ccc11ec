import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp } from '../../functions/api/app';
import { operationIdFor } from '../../functions/core/ids';
import type { Deps } from '../../functions/steps/deps';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * Hostile requests over the whole HTTP API, in-process (Hono's `app.request`) against the real embedded
 * stack's dependencies, so whatever passes the boundary meets the real DynamoDB Local store.
 * FUZZ_SEED repeats a run; FUZZ_RUNS asks for more (at least 10,000 by default).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_130);
const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 10_000));
/** Requests sent concurrently per generated batch: the store's latency overlaps, and races get exercised. */
const BATCH = 8;
const ERROR_CODES = new Set([
  'invalid_request',
  'unauthenticated',
  'forbidden',
  'not_found',
  'call_id_conflict',
  'run_closed',
  'invalid_state',
  'payload_too_large',
  'throttled',
]);
const STACK_TRACE = /\n\s+at\s|\bat\s+\S+\s+\(|\.ts:\d+|node_modules|file:\/\//;

let stack: TestStack;
let app: ReturnType<typeof makeApp>;
const ctx = {
  runIds: [] as string[],
  operationId: '',
  approvalPath: '',
  sig: '',
  secrets: [] as string[],
};

async function json(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const res = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=25' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
}

beforeAll(async () => {
  stack = await startTestStack();
  app = makeApp(stack.deps as Deps);
  const { keys } = stack;
  const config = await (stack.deps as Deps).config();
  ctx.secrets = [...Object.values(keys), config.approvalSecret];
  for (let i = 0; i < 3; i++)
    ctx.runIds.push(
      (await json('POST', '/v1/runs', keys.agent, { budgets: { maxToolCalls: 100_000, maxTurns: 10_000, maxSpendCents: 1_000_000_000 } }))
        .runId,
    );
  // One operation waiting for a person: a real approval link to mutate.
  const waiting = await json('POST', `/v1/runs/${ctx.runIds[0]}/tool-calls`, keys.agent, {
    callId: 'call_fuzz_approval',
    turn: 1,
    name: 'charge_card',
    arguments: { amount: 70_000, currency: 'EUR', customer: 'cus_fuzz' },
  });
  ctx.operationId = waiting.operationId;
  const approvals = await json('GET', '/v1/approvals?status=pending&limit=100', keys.approver);
  const url = new URL(approvals.approvals.find((a: { operationId: string }) => a.operationId === ctx.operationId).url);
  ctx.approvalPath = url.pathname;
  ctx.sig = url.searchParams.get('sig')!;
});
afterAll(async () => {
  await stack?.stop();
});

// ---------- generators ----------

const hostileNumber = fc.constantFrom(
  '1e20',
  '9007199254740993',
  '-9007199254740993',
  '1e309',
  '-1e309',
  '5e-324',
  '1e-200',
  '0',
  '-0',
  '1.5',
  '42',
);
const hostileKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  '',
  'a',
  'orderId',
  'amount',
  '\u202E',
  'k'.repeat(2000),
  'toString',
  'hasOwnProperty',
);
const nested = (depth: number, inner: string) => `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;

/** JSON text that is valid but hostile: deep, huge numbers, odd keys. */
const hostileJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 40 }), hostileNumber).map(([d, n]) => nested(d, n)),
  fc.constantFrom(nested(10_000, '1'), `${'['.repeat(5000)}${']'.repeat(5000)}`),
  fc.tuple(hostileKey, hostileNumber).map(([k, n]) => `{${JSON.stringify(k)}:${n}}`),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', 'null', '[]', '"x"', '{', '{"a":}', '\u0000', '{"a":1}{"b":2}', '{"__proto__":{"polluted":1}}'),
);

/** Arguments that may be reasonable (and reach the store) or not. */
const argumentsText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '{"orderId":"ord_1"}',
      '{"orderId":"ord_2"}',
      '{"orderId":"nope"}',
      '{}',
      '{"amount":1,"currency":"EUR","customer":"c"}',
    ),
  },
  { weight: 2, arbitrary: hostileJsonText },
  { weight: 1, arbitrary: hostileJsonText.map((t) => JSON.stringify(t)) },
  {
    weight: 1,
    arbitrary: fc.tuple(hostileKey, fc.jsonValue({ maxDepth: 2 })).map(([k, v]) => JSON.stringify({ orderId: 'ord_3', [k]: v })),
  },
);

/** A well-formed call on a small set of callIds: it reaches the store, and changed arguments meet 409. */
const plausibleToolCall: fc.Arbitrary<string> = fc
  .record({
    callId: fc.integer({ min: 0, max: 9 }).map((i) => `call_${i}`),
    name: fc.constantFrom('get_order', 'get_order', 'charge_card', 'no_such_tool'),
    args: fc.oneof(
      fc.constantFrom(
        '{"orderId":"ord_1"}',
        '{"orderId":"ord_2"}',
        '{"orderId":"nope"}',
        '{}',
        '{"amount":1,"currency":"EUR","customer":"c"}',
      ),
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify({ orderId: 'ord_1', v })),
    ),
  })
  .map(({ callId, name, args }) => `{"callId":"${callId}","turn":1,"name":"${name}","arguments":${args}}`);

const hostileToolCall: fc.Arbitrary<string> = fc
  .record({
    callId: fc.oneof(
      fc.constantFrom('call_0', 'call_1', 'call_2', 'call_3', 'call_fuzz_approval', '', ' ', 'c'.repeat(200)),
      fc.string({ maxLength: 12 }).map((s) => `call_${s}`),
    ),
    turn: fc.oneof(fc.constantFrom('1', '2', '0', '-1', '1e20', '1.5', '"1"', 'null'), hostileNumber),
    name: fc.constantFrom('get_order', 'charge_card', 'send_email', 'no_such_tool', '', '__proto__', 'x'.repeat(300)),
    args: argumentsText,
    extra: fc.constantFrom('', ',"extra":1', ',"__proto__":{}', ',"constructor":{"prototype":{}}'),
  })
  .map(
    ({ callId, turn, name, args, extra }) =>
      `{"callId":${JSON.stringify(callId)},"turn":${turn},"name":${JSON.stringify(name)},"arguments":${args}${extra}}`,
  );

const toolCallBody = fc.oneof({ weight: 1, arbitrary: plausibleToolCall }, { weight: 3, arbitrary: hostileToolCall });

const runBody: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', '{}', '{"budgets":{"maxTurns":5}}', '{"budgets":{"maxTurns":0}}', '{"budgets":{"maxSpendCents":1e309}}'),
  hostileJsonText.map((t) => `{"metadata":${t}}`),
  hostileJsonText,
);

const decisionBody = fc
  .record({
    decision: fc.constantFrom('"approve"', '"reject"', '"maybe"', 'null', '1e309'),
    reason: fc.oneof(
      fc.constant(''),
      fc.string({ maxLength: 20 }).map((s) => `,"reason":${JSON.stringify(s)}`),
    ),
    sig: fc.constantFrom('valid', 'none', 'garbage', 'null', 'huge'),
  })
  .map(({ decision, reason, sig }) => ({ decision, reason, sig }));

/** An id for a path segment: a real one, or something the API never issued. */
const idSegment = (real: () => string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(null).map(() => real()) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'A'.repeat(3000),
        '..',
        '%2e%2e',
        '%00',
        '%E0%A4%A',
        '%F0%9F%92%A9',
        'run_%E2%80%AE',
        '__proto__',
        'constructor',
        '-',
        '_',
      ),
    },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.integer({ min: 129, max: 5000 }).map((n) => `op_${'x'.repeat(n)}`) },
  );

const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '?status=pending',
    '?status=done',
    '?limit=0',
    '?limit=100',
    '?limit=1e2',
    '?cursor=abc',
    '?cursor=' + 'A'.repeat(4000),
    '?format=openai',
    '?format=x',
    '?sig=',
    '?a=%ZZ',
    '?limit=2&cursor=eyJhIjpudWxsfQ',
  ),
  fc
    .dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 30 }), { maxKeys: 3 })
    .map((d) => `?${new URLSearchParams(d).toString()}`),
);

type Principal = 'agent' | 'approver' | 'reviewer' | 'admin' | 'other';
const auth = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom<Principal>('agent', 'approver', 'reviewer', 'admin', 'other').map((p) => ({ kind: 'key' as const, p })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer tr_wrong', `Bearer ${'x'.repeat(10_000)}`, 'bearer  \t x y')
      .map((h) => ({ kind: 'raw' as const, h })),
  },
);

/** Odd headers beside the ones that matter; `Prefer` always ends up meaning no wait, so nothing long-polls. */
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'accept',
    'cookie',
    'x-forwarded-for',
    'origin',
    'referer',
    'x-amz-target',
    'idempotency-key',
    'prefer',
    'content-language',
  ),
  fc.oneof(
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
    fc.constantFrom('wait=0', 'wait=00', 'respond-async, wait=0', 'x'.repeat(8000)),
  ),
  { maxKeys: 3 },
);

const contentType = fc.constantFrom(
  'application/json',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=x',
  '',
  'application/json; charset=utf-16',
);

interface FuzzRequest {
  method: string;
  path: string;
  body?: string;
  headers: Record<string, string>;
  /** For the partial-write check: the tool call this request proposed, if any. */
  toolCall?: { runId: string; callId?: string };
}

/** Routes, weighted so that most requests are hostile at the boundary and a fraction reaches the store. */
function requestArbitrary(): fc.Arbitrary<FuzzRequest> {
  const runId = () => ctx.runIds[0];
  const anyRun = fc.constantFrom(0, 1, 2).map((i) => ctx.runIds[i]);
  const withAuth = (a: fc.Arbitrary<Omit<FuzzRequest, 'headers'> & { ct?: string }>) =>
    fc.tuple(a, auth, contentType, extraHeaders).map(([r, who, ct, extra]) => {
      const headers: Record<string, string> = { ...extra, prefer: 'wait=0', 'content-type': r.ct ?? ct };
      const value = who.kind === 'key' ? `Bearer ${stack.keys[who.p]}` : who.h;
      if (value) headers.authorization = value;
      return { ...r, headers } as FuzzRequest;
    });
  return fc.oneof(
    {
      weight: 5,
      arbitrary: withAuth(
        fc.tuple(anyRun, toolCallBody, fc.constantFrom('application/json', undefined)).map(([id, body, ct]) => {
          let callId: string | undefined;
          try {
            callId = (JSON.parse(body) as { callId?: string }).callId;
          } catch {
            callId = undefined;
          }
          return { method: 'POST', path: `/v1/runs/${id}/tool-calls`, body, ct, toolCall: { runId: id, callId } };
        }),
      ),
    },
    { weight: 2, arbitrary: withAuth(runBody.map((body) => ({ method: 'POST', path: '/v1/runs', body }))) },
    {
      weight: 3,
      arbitrary: withAuth(
        fc
          .tuple(
            fc.constantFrom(
              'GET /v1/runs',
              'GET /v1/runs/{r}',
              'POST /v1/runs/{r}/cancel',
              'GET /v1/runs/{r}/trace',
              'POST /v1/runs/{r}/tool-calls',
              'GET /v1/operations/{o}',
              'POST /v1/operations/{o}/cancel',
              'POST /v1/operations/{o}/resolve',
              'GET /v1/tools',
              'GET /v1/approvals',
              'GET /v1/health',
              'DELETE /v1/runs/{r}',
              'PUT /v1/operations/{o}',
              'GET /v1/nope',
            ),
            idSegment(runId),
            idSegment(() => ctx.operationId),
            query,
            fc.option(hostileJsonText, { nil: undefined }),
          )
          .map(([route, r, o, q, body]) => {
            const [method, template] = route.split(' ');
            // Cancelling the shared runs would close them for every later request; a hostile id is fine.
            const cancelsShared = template.endsWith('/cancel') && (r === ctx.runIds[0] || o === ctx.operationId);
            const path = template.replace('{r}', cancelsShared ? 'run_unknown' : r).replace('{o}', cancelsShared ? 'op_unknown' : o) + q;
            return { method, path, body: method === 'GET' ? undefined : body };
          }),
      ),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.constantFrom('GET', 'POST'),
          fc.oneof(
            { weight: 3, arbitrary: fc.constant(null).map(() => ctx.approvalPath) },
            { weight: 1, arbitrary: idSegment(() => 'apr_x').map((id) => `/v1/approvals/apr_${id}`) },
          ),
          fc.constantFrom('valid', 'none', 'garbage', 'null', 'array', 'huge', 'truncated', 'swapped'),
          decisionBody,
          fc.constantFrom('json', 'form'),
        )
        .map(([method, path, sigKind, d, enc]): FuzzRequest => {
          const sig = mutateSig(sigKind);
          if (method === 'GET')
            return { method, path: `${path}${sig === undefined ? '' : `?sig=${encodeURIComponent(sig)}`}`, headers: {} };
          // Never a valid signature with a real decision: the one approval would be decided on the first try.
          const bodySig = d.sig === 'valid' ? mutateSig('garbage') : mutateSig(d.sig);
          if (enc === 'form') {
            const form = new URLSearchParams({ decision: d.decision.replace(/"/g, ''), ...(bodySig ? { sig: bodySig } : {}) });
            return { method, path, body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
          }
          const body = `{"decision":${d.decision}${d.reason}${bodySig === undefined ? '' : `,"sig":${JSON.stringify(bodySig)}`}}`;
          return { method, path, body, headers: { 'content-type': 'application/json' } };
        }),
    },
  );
}

function mutateSig(kind: string): string | undefined {
  const [payload, mac] = ctx.sig.split('.');
  switch (kind) {
    case 'valid':
      return ctx.sig;
    case 'garbage':
      return `${ctx.sig}.garbage`;
    case 'null':
      return `${Buffer.from('null').toString('base64url')}.${mac}`;
    case 'array':
      return `${Buffer.from('[1]').toString('base64url')}.${mac}`;
    case 'huge':
      return `${'A'.repeat(5000)}.${mac}`;
    case 'truncated':
      return ctx.sig.slice(0, -3);
    case 'swapped':
      return `${mac}.${payload}`;
    default:
      return undefined;
  }
}

// ---------- the property ----------

describe.runIf(isEmbedded)('fuzzing the HTTP API in-process against the real store', () => {
  it(`answers ${RUNS} hostile requests (seed ${SEED}) without a 5xx, a stack trace, a secret or a partial write`, async () => {
    const started = Date.now();
    const cpu0 = process.cpuUsage();
    let sent = 0;
    const reachedStore = { created: 0, replayed: 0 };
    const accepted = new Set<string>([ctx.operationId]);
    const refused = new Map<string, string>();
    const statuses = new Map<number, number>();

    const one = async (req: FuzzRequest): Promise<void> => {
      sent++;
      const res = await app.request(req.path, { method: req.method, headers: req.headers, body: req.body });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const where = `${req.method} ${req.path.slice(0, 120)} -> ${res.status} ${text.slice(0, 200)}`;
      expect(res.status, where).toBeLessThan(500);
      expect(STACK_TRACE.test(text), where).toBe(false);
      for (const secret of ctx.secrets) expect(text.includes(secret), `${where} leaks a secret`).toBe(false);
      const type = res.headers.get('content-type') ?? '';
      if (type.includes('application/json') && res.status >= 400) {
        const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
        expect(ERROR_CODES.has(body.error?.code ?? ''), where).toBe(true);
        expect(typeof body.error?.message, where).toBe('string');
      }
      if (req.toolCall?.callId !== undefined) {
        const id = operationIdFor(req.toolCall.runId, req.toolCall.callId);
        if (res.status === 200 || res.status === 202) {
          accepted.add(id);
          if (res.headers.get('idempotent-replayed') === 'true') reachedStore.replayed++;
          else reachedStore.created++;
        } else if (res.status === 400) refused.set(id, req.toolCall.callId);
      }
    };
    await fc.assert(
      fc.asyncProperty(fc.array(requestArbitrary(), { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        await Promise.all(batch.map(one));
      }),
      { seed: SEED, numRuns: Math.ceil(RUNS / BATCH), endOnFailure: true },
    );

    // No partial write: a refused tool call left no operation behind (unless the same callId was also accepted).
    const store = (stack.deps as Deps).store;
    for (const [id, callId] of refused) {
      if (accepted.has(id)) continue;
      expect(await store.getOperation(id), `refused call ${callId} left an operation`).toBeUndefined();
    }
    // And every run's trace is whole: strictly increasing sequence numbers, every operation proposed exactly once.
    for (const runId of ctx.runIds) {
      const events = await store.listEvents(runId);
      const seqs = events.map((e) => e.seq);
      expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
      const ops = await store.listOperationsOfRun(runId);
      const proposed = events.filter((e) => e.type === 'operation.proposed').map((e) => e.operationId);
      expect(new Set(proposed).size).toBe(proposed.length);
      expect(new Set(proposed)).toEqual(new Set(ops.map((o) => o.operationId)));
    }

    const seconds = (Date.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    console.log(`cpu: user ${(cpu.user / 1e6).toFixed(1)} s, system ${(cpu.system / 1e6).toFixed(1)} s`);
    console.log(
      `fuzz: ${sent} requests, seed ${SEED}, ${seconds.toFixed(1)} s, ${reachedStore.created} created and ${reachedStore.replayed} replayed tool calls, ${refused.size} refused call ids; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    // The bias works: a fair share got past the boundary to the store (only the store can answer 2xx or 409).
    const storeAnswers = [...statuses].filter(([status]) => status < 300 || status === 409).reduce((n, [, count]) => n + count, 0);
    expect(storeAnswers).toBeGreaterThan(sent / 20);
    expect(reachedStore.created).toBeGreaterThan(0);
  }, 300_000);
});
