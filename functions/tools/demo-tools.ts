import { z } from 'zod';
import { canonicalJson } from '../core/canonical';
import { formatMinorUnits } from '../core/format';
import type { ToolSpec } from '../core/tool-spec';
import { requestJson } from './http';

/** The demo tools over the sandbox upstreams (`docs/sandbox.md`; the tests rely on these names and arguments). */
export function makeDemoTools(sandboxUrl: string): ToolSpec[] {
  const url = (path: string) => `${sandboxUrl.replace(/\/$/, '')}${path}`;
  // Tools return the upstream's JSON as is; the lifecycle validates it against outputSchema.
  /** The sandbox's record of what it did, for `toolrunner verify` to count effects with. */
  const ledger = async (): Promise<{ kind: string; id: string; body: unknown }[]> => {
    const res = await fetch(url('/_sandbox/ledger'));
    if (!res.ok) throw new Error(`the sandbox ledger answered ${res.status}`);
    return (await res.json()) as { kind: string; id: string; body: unknown }[];
  };

  const Order = z.object({
    id: z.string(),
    status: z.string(),
    customer: z.string(),
    totalCents: z.number().int(),
    shippingAddress: z.record(z.string(), z.string()),
    items: z
      .array(z.object({ sku: z.string(), description: z.string(), quantity: z.number().int(), unitCents: z.number().int() }))
      .optional(),
  });
  const getOrder: ToolSpec<{ orderId: string }, z.infer<typeof Order>> = {
    name: 'get_order',
    description: 'Look up an order by id: status, customer, total, shipping address and line items.',
    inputSchema: z.strictObject({ orderId: z.string().regex(/^ord_[A-Za-z0-9]{1,32}$/, 'must look like ord_123') }),
    outputSchema: Order,
    risk: 'read',
    timeoutMs: 5_000,
    maxAttempts: 3,
    supportsIdempotency: true,
    approval: 'never',
    execute: (ctx, input) =>
      requestJson(ctx, { method: 'GET', url: url(`/v1/orders/${encodeURIComponent(input.orderId)}`) }) as Promise<z.infer<typeof Order>>,
    verify: { cases: [{ name: 'an order', input: { orderId: 'ord_42' } }] },
  };

  const ChargeInput = z.strictObject({
    amount: z.number().int().positive().max(10_000_000),
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD'),
    customer: z.string().min(1).max(200),
    description: z.string().max(500).optional(),
    // Stripe's metadata as key-value pairs (at most 50 keys of up to 40 characters, values of up to 500): a
    // list of pairs, not an open map, so OpenAI's strict mode can still be promised for this tool.
    metadata: z
      .array(z.strictObject({ key: z.string().min(1).max(40), value: z.string().max(500) }))
      .max(50)
      .refine((pairs) => new Set(pairs.map((p) => p.key)).size === pairs.length, 'metadata keys must be unique')
      .optional(),
  });
  const Charge = z.object({
    id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    customer: z.string(),
    status: z.string(),
    metadata: z.record(z.string(), z.string()).optional(),
  });
  const chargeCard: ToolSpec<z.infer<typeof ChargeInput>, z.infer<typeof Charge>> = {
    name: 'charge_card',
    description:
      'Charge a customer. Amount in integer cents; charges of 50000 cents or more need a person to approve. Optional metadata: your own key-value pairs ({ key, value }), kept with the charge.',
    inputSchema: ChargeInput,
    outputSchema: Charge,
    risk: 'irreversible_write',
    timeoutMs: 3_000,
    maxAttempts: 3,
    supportsIdempotency: true,
    costCents: (input) => input.amount,
    approval: (input) => input.amount >= 50_000,
    describeForApproval: (input) => [
      `Charge ${formatMinorUnits(input.amount, input.currency)} (${input.amount} in minor units of ${input.currency}) to customer ${input.customer}.`,
      'Charges of 50000 minor units or more need a person to approve.',
      ...(input.description ? [`Description: ${input.description}`] : []),
    ],
    execute: (ctx, input) =>
      requestJson(ctx, {
        method: 'POST',
        url: url('/v1/charges'),
        body: { ...input, metadata: input.metadata && Object.fromEntries(input.metadata.map((p) => [p.key, p.value])) },
        headers: { 'Idempotency-Key': ctx.idempotencyKey },
      }) as Promise<z.infer<typeof Charge>>,
    reconcile: async (ctx, _input) => {
      const found = (await requestJson(ctx, {
        method: 'GET',
        url: url(`/v1/charges?idempotency_key=${encodeURIComponent(ctx.idempotencyKey)}`),
      })) as { data?: unknown[] };
      const first = found?.data?.[0];
      return first ? { found: true, result: first as z.infer<typeof Charge> } : { found: false };
    },
    verify: { cases: [{ name: 'a small charge', input: { amount: 1250, currency: 'USD', customer: 'cus_verify' } }] },
  };

  const Email = z.object({ id: z.string(), status: z.string() });
  const sendEmail: ToolSpec<{ to: string; subject: string; body: string }, z.infer<typeof Email>> = {
    name: 'send_email',
    description: 'Send an email. Never retried automatically: an unknown outcome goes to a person.',
    inputSchema: z.strictObject({ to: z.email(), subject: z.string().min(1).max(200), body: z.string().min(1).max(20_000) }),
    outputSchema: Email,
    risk: 'irreversible_write',
    timeoutMs: 3_000,
    maxAttempts: 1,
    supportsIdempotency: false,
    approval: 'never',
    execute: (ctx, input) => requestJson(ctx, { method: 'POST', url: url('/v1/emails'), body: input }) as Promise<z.infer<typeof Email>>,
    verify: {
      cases: [{ name: 'a receipt', input: { to: 'verify@example.com', subject: 'Your receipt', body: 'Thank you.' } }],
      // Emails the sandbox sent with exactly this message.
      effects: async (input) => (await ledger()).filter((e) => e.kind === 'email' && canonicalJson(e.body) === canonicalJson(input)).length,
    },
  };

  const Address = z.strictObject({
    line1: z.string().min(1).max(200),
    city: z.string().min(1).max(100),
    postalCode: z.string().min(1).max(20),
    country: z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166 alpha-2 code'),
  });
  const updateShippingAddress: ToolSpec<{ orderId: string; address: z.infer<typeof Address> }, z.infer<typeof Order>> = {
    name: 'update_shipping_address',
    description: "Replace an order's shipping address. Writes to one order are serialized.",
    inputSchema: z.strictObject({ orderId: z.string().regex(/^ord_[A-Za-z0-9]{1,32}$/, 'must look like ord_123'), address: Address }),
    outputSchema: Order,
    risk: 'reversible_write',
    timeoutMs: 3_000,
    maxAttempts: 3,
    // A PUT of the whole address is naturally idempotent: replaying it cannot do anything twice.
    supportsIdempotency: true,
    lockKey: (input) => input.orderId,
    approval: 'never',
    execute: (ctx, input) =>
      requestJson(ctx, {
        method: 'PUT',
        url: url(`/v1/orders/${encodeURIComponent(input.orderId)}/shipping-address`),
        body: input.address,
      }) as Promise<z.infer<typeof Order>>,
    verify: {
      // Two addresses in turn, so that every case changes the order.
      cases: [
        {
          name: 'to Paris',
          input: { orderId: 'ord_99', address: { line1: '1 Rue de Rivoli', city: 'Paris', postalCode: '75001', country: 'FR' } },
        },
        {
          name: 'to Berlin',
          input: { orderId: 'ord_99', address: { line1: '2 Unter den Linden', city: 'Berlin', postalCode: '10117', country: 'DE' } },
        },
      ],
      // A PUT's effect is the change it makes: the times the order's address became this one (a replay changes nothing).
      effects: async (input) => {
        let previous: string | undefined;
        let changes = 0;
        for (const e of await ledger()) {
          if (e.kind !== 'shipping_address' || e.id !== input.orderId) continue;
          const body = canonicalJson(e.body);
          if (body !== previous && body === canonicalJson(input.address)) changes++;
          previous = body;
        }
        return changes;
      },
    },
  };

  return [getOrder, chargeCard, sendEmail, updateShippingAddress];
}
