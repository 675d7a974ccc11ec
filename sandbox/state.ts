import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';

export const FAULT_MODES = ['commit_then_timeout', 'fail_503', 'rate_limit_429', 'hang', 'permanent_402', 'reset_connection'] as const;

export const FaultSchema = z.strictObject({
  route: z.string().regex(/^(GET|POST|PUT|DELETE) \/\S*$/, 'route must look like "POST /v1/charges"'),
  mode: z.enum(FAULT_MODES),
  count: z.number().int().min(1).max(1000).default(1),
  retryAfterSeconds: z.number().int().min(0).max(3600).optional(),
  delayMs: z.number().int().min(0).max(600_000).optional(),
});
export type Fault = z.infer<typeof FaultSchema>;

export interface LedgerEntry {
  kind: 'charge' | 'email' | 'shipping_address';
  id: string;
  idempotencyKey?: string;
  body: unknown;
  at: string;
}

export interface Charge {
  id: string;
  amount: number;
  currency: string;
  customer: string;
  description?: string;
  status: 'succeeded';
  idempotencyKey?: string;
  created: string;
}

export interface Order {
  id: string;
  status: string;
  customer: string;
  totalCents: number;
  shippingAddress: { line1: string; city: string; postalCode: string; country: string };
}

export interface SandboxState {
  nextId: number;
  charges: Charge[];
  /** Stripe-like idempotency: key → hash of the body it was first used with, and the stored answer. */
  idempotency: Record<string, { bodyHash: string; status: number; body: unknown }>;
  orders: Record<string, Order>;
  ledger: LedgerEntry[];
  faults: Fault[];
}

export function initialState(): SandboxState {
  const orders: Record<string, Order> = {};
  for (let i = 1; i <= 100; i++) {
    orders[`ord_${i}`] = {
      id: `ord_${i}`,
      status: i % 7 === 0 ? 'shipped' : 'paid',
      customer: `cus_${((i - 1) % 20) + 1}`,
      totalCents: 1000 + i * 250,
      shippingAddress: { line1: `${i} Main Street`, city: 'Springfield', postalCode: `${10000 + i}`, country: 'US' },
    };
  }
  return { nextId: 1, charges: [], idempotency: {}, orders, ledger: [], faults: [] };
}

/** State on disk, rewritten atomically (temp file + rename) after every change, so a kill loses nothing committed. */
export class StateFile {
  state: SandboxState;
  constructor(private readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    try {
      this.state = JSON.parse(readFileSync(path, 'utf8')) as SandboxState;
    } catch {
      this.state = initialState();
      this.save();
    }
  }
  save(): void {
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state));
    renameSync(tmp, this.path);
  }
}
