import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
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
  metadata?: Record<string, string>;
  status: 'succeeded';
  idempotencyKey?: string;
  created: string;
}

/** One line of an order; the seeded orders have none, an order put through `PUT /_sandbox/orders/{id}` may. */
export interface OrderItem {
  sku: string;
  description: string;
  quantity: number;
  unitCents: number;
}

export interface Order {
  id: string;
  status: string;
  customer: string;
  totalCents: number;
  shippingAddress: { line1: string; city: string; postalCode: string; country: string };
  items?: OrderItem[];
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

/**
 * State on disk, rewritten atomically (temp file + rename) so a kill never leaves half a file.
 * Writes are asynchronous and coalesced: at most one in flight and one pending, the pending one taking a
 * snapshot only when it starts, so a burst of changes costs two writes, not one per change, and the event
 * loop never waits on the disk. Handlers `await durable()` before answering, so a committed side effect is
 * on disk before its response is sent: a SIGKILL after the answer loses nothing the client was told about.
 */
export class StateFile {
  state: SandboxState;
  /** Completed writes, for tests and diagnostics. */
  writes = 0;
  private inFlight: Promise<void> | undefined;
  private pending: Promise<void> | undefined;
  private readonly tmp: string;

  constructor(private readonly path: string) {
    this.tmp = `${path}.tmp`;
    mkdirSync(dirname(path), { recursive: true });
    try {
      this.state = JSON.parse(readFileSync(path, 'utf8')) as SandboxState;
    } catch {
      this.state = initialState();
      // Once, at start, before any request: nothing is waiting on the event loop yet.
      writeFileSync(this.tmp, JSON.stringify(this.state), { mode: 0o600 });
      renameSync(this.tmp, path);
    }
  }

  /** Schedules a write of the current state; `durable()` says when it (and every earlier change) is on disk. */
  save(): void {
    if (!this.inFlight) {
      this.write();
      return;
    }
    // The write in flight took its snapshot before this change: one more write after it carries every change since.
    this.pending ??= this.inFlight
      .catch(() => undefined)
      .then(() => {
        this.pending = undefined;
        return this.write();
      });
    this.pending.catch(() => undefined);
  }

  /** Resolves once every change saved so far is on disk; rejects if that write failed. */
  durable(): Promise<void> {
    return this.pending ?? this.inFlight ?? Promise.resolve();
  }

  private write(): Promise<void> {
    const text = JSON.stringify(this.state);
    const tracked: Promise<void> = (async () => {
      // The ledger holds customers' details: owner-only, like DynamoDB Local's files beside it.
      await writeFile(this.tmp, text, { mode: 0o600 });
      await rename(this.tmp, this.path);
      this.writes++;
    })().finally(() => {
      if (this.inFlight === tracked) this.inFlight = undefined;
    });
    // Callers that do not wait must not turn a failed write into an unhandled rejection; `durable()` still reports it.
    tracked.catch(() => undefined);
    this.inFlight = tracked;
    return tracked;
  }
}
