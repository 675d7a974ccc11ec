import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { z } from 'zod';
import { FaultSchema, initialState, StateFile, type Fault, type LedgerEntry } from './state';

/** Stripe's limits on metadata: at most 50 keys of up to 40 characters, values of up to 500. */
const Metadata = z
  .record(z.string().min(1).max(40), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 50, 'metadata has at most 50 keys');
const ChargeBody = z.strictObject({
  amount: z.number().int().positive(),
  currency: z.string().regex(/^[A-Z]{3}$/),
  customer: z.string().min(1),
  description: z.string().optional(),
  metadata: Metadata.optional(),
});
const EmailBody = z.strictObject({ to: z.string().min(3), subject: z.string().min(1), body: z.string() });
const AddressBody = z.strictObject({
  line1: z.string().min(1),
  city: z.string().min(1),
  postalCode: z.string().min(1),
  country: z.string().min(2),
});
/** An order as `PUT /_sandbox/orders/{id}` puts it (the id comes from the path). */
const OrderBody = z.strictObject({
  status: z.string().min(1),
  customer: z.string().min(1),
  totalCents: z.number().int().min(0),
  shippingAddress: AddressBody,
  items: z
    .array(
      z.strictObject({
        sku: z.string().min(1),
        description: z.string(),
        quantity: z.number().int().positive(),
        unitCents: z.number().int().min(0),
      }),
    )
    .optional(),
});

const MAX_BODY = 1024 * 1024;

/**
 * The sandbox upstreams (`docs/sandbox.md`): Stripe-like charges, emails without idempotency, orders,
 * and faults that make them misbehave on purpose. Plain node:http, because some faults need the raw socket.
 */
export function createSandbox(dataDir: string): Server {
  const file = new StateFile(join(dataDir, 'sandbox.json'));
  const held = new Set<ServerResponse>();

  const server = createServer(async (req, res) => {
    try {
      await handle(req, res);
    } catch {
      if (!res.headersSent) send(res, 500, { error: { code: 'internal', message: 'sandbox error' } });
    }
  });
  server.on('close', () => {
    for (const r of held) r.destroy();
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    if (raw === undefined) return send(res, 413, { error: { code: 'payload_too_large', message: 'body over 1 MiB' } });
    let body: unknown;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        return send(res, 400, { error: { code: 'invalid_json', message: 'body is not JSON' } });
      }
    }
    const state = file.state;

    if (method === 'GET' && path === '/health') return send(res, 200, { status: 'ok' });
    if (method === 'POST' && path === '/_sandbox/faults') {
      const parsed = FaultSchema.safeParse(body);
      if (!parsed.success)
        return send(res, 400, { error: { code: 'invalid_request', message: parsed.error.issues.map((i) => i.message).join('; ') } });
      state.faults.push(parsed.data);
      file.save();
      await file.durable();
      return send(res, 201, parsed.data);
    }
    if (method === 'GET' && path === '/_sandbox/faults') return send(res, 200, state.faults);
    if (method === 'GET' && path === '/_sandbox/ledger') {
      // The ledger shows what is committed, and committed means on disk: a test that sees a charge here and
      // then kills the process finds it again after a restart.
      await file.durable();
      return send(res, 200, state.ledger);
    }
    const seeded = path.match(/^\/_sandbox\/orders\/(ord_[A-Za-z0-9]{1,32})$/);
    if (method === 'PUT' && seeded) {
      const parsed = OrderBody.safeParse(body);
      if (!parsed.success)
        return send(res, 400, { error: { code: 'invalid_request', message: parsed.error.issues.map((i) => i.message).join('; ') } });
      const order = { id: seeded[1], ...parsed.data };
      state.orders[order.id] = order;
      file.save();
      await file.durable();
      return send(res, 200, order);
    }
    if (method === 'POST' && path === '/_sandbox/reset') {
      file.state = initialState();
      file.save();
      await file.durable();
      return send(res, 200, { status: 'reset' });
    }

    const route = routeOf(method, path);
    if (!route) return send(res, 404, { error: { code: 'not_found', message: `no route ${method} ${path}` } });
    const fault = takeFault(route.key, `${method} ${path}`);
    if (fault && fault.mode !== 'commit_then_timeout') {
      await file.durable();
      return applyFault(res, fault);
    }

    const answer = route.run(body, url, req);
    // Whatever the route committed (a charge, an email, a used-up fault) is on disk before anyone hears of it.
    await file.durable();
    if (fault?.mode === 'commit_then_timeout') return hold(res, fault.delayMs ?? 60_000, answer);
    return send(res, answer.status, answer.body, answer.headers);
  }

  function takeFault(template: string, concrete: string): Fault | undefined {
    const faults = file.state.faults;
    const index = faults.findIndex((f) => f.route === template || f.route === concrete);
    if (index < 0) return undefined;
    const fault = { ...faults[index] };
    if (faults[index].count <= 1) faults.splice(index, 1);
    else faults[index].count -= 1;
    file.save();
    return fault;
  }

  function applyFault(res: ServerResponse, fault: Fault): void {
    switch (fault.mode) {
      case 'fail_503':
        send(res, 503, { error: { code: 'service_unavailable', message: 'try again later' } });
        return;
      case 'rate_limit_429':
        send(res, 429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': String(fault.retryAfterSeconds ?? 1) });
        return;
      case 'permanent_402':
        send(res, 402, { error: { code: 'card_declined', message: 'the card was declined' } });
        return;
      case 'hang':
        hold(res, fault.delayMs ?? 600_000, undefined);
        return;
      case 'reset_connection':
        res.socket?.destroy();
        return;
      default:
        return;
    }
  }

  /** Holds the response (the work, if any, is already committed); answers only if the client is still there. */
  function hold(res: ServerResponse, ms: number, answer: Answer | undefined): void {
    held.add(res);
    const timer = setTimeout(() => {
      held.delete(res);
      if (answer && !res.destroyed) send(res, answer.status, answer.body, answer.headers);
      else res.destroy();
    }, ms);
    res.on('close', () => {
      clearTimeout(timer);
      held.delete(res);
    });
  }

  interface Answer {
    status: number;
    body: unknown;
    headers?: Record<string, string>;
  }

  function record(entry: Omit<LedgerEntry, 'at'>): void {
    file.state.ledger.push({ ...entry, at: new Date().toISOString() });
  }

  function routeOf(
    method: string,
    path: string,
  ): { key: string; run: (body: unknown, url: URL, req: IncomingMessage) => Answer } | undefined {
    const state = () => file.state;
    if (method === 'POST' && path === '/v1/charges') {
      return {
        key: 'POST /v1/charges',
        run: (body, _url, req) => {
          const parsed = ChargeBody.safeParse(body);
          if (!parsed.success) return { status: 400, body: { error: { code: 'invalid_request', message: 'invalid charge' } } };
          const key = headerOf(req, 'idempotency-key');
          const bodyHash = createHash('sha256').update(JSON.stringify(parsed.data)).digest('hex');
          if (key) {
            const seen = state().idempotency[key];
            if (seen && seen.bodyHash !== bodyHash) {
              return {
                status: 409,
                body: { error: { code: 'idempotency_key_reused', message: 'this key was used with a different body' } },
              };
            }
            if (seen) return { status: seen.status, body: seen.body, headers: { 'idempotent-replayed': 'true' } };
          }
          const charge = {
            id: `ch_${state().nextId++}`,
            ...parsed.data,
            status: 'succeeded' as const,
            idempotencyKey: key,
            created: new Date().toISOString(),
          };
          state().charges.push(charge);
          if (key) state().idempotency[key] = { bodyHash, status: 200, body: charge };
          record({ kind: 'charge', id: charge.id, idempotencyKey: key, body: parsed.data });
          file.save();
          return { status: 200, body: charge };
        },
      };
    }
    if (method === 'GET' && path === '/v1/charges') {
      return {
        key: 'GET /v1/charges',
        run: (_b, url) => {
          const key = url.searchParams.get('idempotency_key');
          return { status: 200, body: { data: state().charges.filter((c) => !key || c.idempotencyKey === key) } };
        },
      };
    }
    const charge = path.match(/^\/v1\/charges\/([^/]+)$/);
    if (method === 'GET' && charge) {
      return {
        key: 'GET /v1/charges/{id}',
        run: () => {
          const found = state().charges.find((c) => c.id === charge[1]);
          return found ? { status: 200, body: found } : { status: 404, body: { error: { code: 'not_found', message: 'no such charge' } } };
        },
      };
    }
    if (method === 'POST' && path === '/v1/emails') {
      return {
        key: 'POST /v1/emails',
        run: (body) => {
          const parsed = EmailBody.safeParse(body);
          if (!parsed.success) return { status: 400, body: { error: { code: 'invalid_request', message: 'invalid email' } } };
          const email = { id: `em_${state().nextId++}`, status: 'sent' };
          record({ kind: 'email', id: email.id, body: parsed.data });
          file.save();
          return { status: 200, body: email };
        },
      };
    }
    const order = path.match(/^\/v1\/orders\/([^/]+)$/);
    if (method === 'GET' && order) {
      return {
        key: 'GET /v1/orders/{id}',
        run: () => {
          const found = state().orders[order[1]];
          return found ? { status: 200, body: found } : { status: 404, body: { error: { code: 'not_found', message: 'no such order' } } };
        },
      };
    }
    const address = path.match(/^\/v1\/orders\/([^/]+)\/shipping-address$/);
    if (method === 'PUT' && address) {
      return {
        key: 'PUT /v1/orders/{id}/shipping-address',
        run: (body) => {
          const found = state().orders[address[1]];
          if (!found) return { status: 404, body: { error: { code: 'not_found', message: 'no such order' } } };
          const parsed = AddressBody.safeParse(body);
          if (!parsed.success) return { status: 400, body: { error: { code: 'invalid_request', message: 'invalid address' } } };
          found.shippingAddress = parsed.data;
          record({ kind: 'shipping_address', id: found.id, body: parsed.data });
          file.save();
          return { status: 200, body: found };
        },
      };
    }
    return undefined;
  }

  return server;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value || undefined;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
