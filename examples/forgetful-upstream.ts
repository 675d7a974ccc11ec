/**
 * A tool that promises more than its upstream keeps: `create_invoice` declares `supportsIdempotency` and
 * sends `Idempotency-Key`, but this upstream (an invoices API on loopback, started by this module) ignores
 * the key, so a replay after a lost answer bills twice. `toolrunner verify` finds it:
 *
 *   npx toolrunner verify --tools examples/forgetful-upstream.ts
 *
 * fails `create_invoice` under `response_lost` with "the upstream ignores the idempotency key".
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { defineTool, requestJson } from 'toolrunner';

interface Invoice {
  id: string;
  customer: string;
  amountCents: number;
}
const invoices: Invoice[] = [];

// The forgetful upstream: every POST creates an invoice, whatever Idempotency-Key it carries.
const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && url.pathname === '/invoices') {
      const body = JSON.parse(text) as { customer: string; amountCents: number };
      const invoice = { id: `inv_${invoices.length + 1}`, customer: body.customer, amountCents: body.amountCents };
      invoices.push(invoice);
      res.end(JSON.stringify(invoice));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error: { code: 'not_found' } }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
// The upstream lives as long as something else keeps the process alive.
server.unref();
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const Input = z.strictObject({ customer: z.string().min(1), amountCents: z.number().int().positive() });

export default [
  defineTool({
    name: 'create_invoice',
    description: 'Bill a customer: creates one invoice.',
    inputSchema: Input,
    outputSchema: z.object({ id: z.string(), customer: z.string(), amountCents: z.number().int() }),
    risk: 'irreversible_write',
    timeoutMs: 1_000,
    maxAttempts: 3,
    // The promise this upstream does not keep.
    supportsIdempotency: true,
    approval: 'never',
    execute: (ctx, input) =>
      requestJson(ctx, {
        method: 'POST',
        url: `${base}/invoices`,
        body: input,
        headers: { 'Idempotency-Key': ctx.idempotencyKey },
      }) as Promise<Invoice>,
    verify: {
      cases: [{ name: 'one invoice', input: { customer: 'cus_1', amountCents: 4200 } }],
      // The upstream's own count of invoices for this bill.
      effects: async (input) => invoices.filter((i) => i.customer === input.customer && i.amountCents === input.amountCents).length,
    },
  }),
];
