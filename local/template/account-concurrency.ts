import { z } from 'zod';

/** `TOOLRUNNER_ACCOUNT_CONCURRENCY`'s default: a pool a two-core machine can start instances for. */
export const DEFAULT_ACCOUNT_CONCURRENCY = 50;
/** The pool AWS gives an account by default; the template's reservations are sized for it. */
export const AWS_ACCOUNT_CONCURRENCY = 1000;

/** A function's share of the pool: its reserved concurrency if it has one (also its ceiling), else the unreserved rest. */
export interface FunctionConcurrency {
  /** Counts an invocation in, or refuses it: the caller throttles (`TooManyRequestsException`). */
  tryAcquire(): boolean;
  release(): void;
  /** Invocations at once this function can reach. */
  readonly limit: number;
  readonly reserved?: number;
  /** Invocations refused so far. */
  readonly throttles: number;
}

/**
 * One account's concurrency pool, as Lambda keeps it: every function with `ReservedConcurrentExecutions` has
 * that many for itself and never more; the others share what is left. AWS refuses a reservation that leaves
 * fewer than 100 unreserved; here the rule keeps 10% of the pool (at least 1) unreserved.
 *
 * The template's reservations are sized for AWS's default pool of 1,000; a smaller pool here scales each down
 * in proportion (at least 1, a reservation of 0 stays 0), so the stack keeps its shape on a pool of 50.
 */
export class AccountConcurrency {
  private readonly shares = new Map<string, FunctionConcurrency>();
  readonly unreserved: number;
  /** The reservations after scaling, by function name. */
  readonly reservations: ReadonlyMap<string, number>;
  private unreservedInUse = 0;

  constructor(
    readonly pool: number,
    reservedByFunction: ReadonlyMap<string, number>,
  ) {
    const scale = Math.min(1, pool / AWS_ACCOUNT_CONCURRENCY);
    const scaled = new Map([...reservedByFunction].map(([name, r]) => [name, r === 0 ? 0 : Math.max(1, Math.round(r * scale))]));
    this.reservations = scaled;
    this.unreserved = pool - [...scaled.values()].reduce((a, b) => a + b, 0);
    const minimum = minimumUnreserved(pool);
    if (this.unreserved < minimum)
      throw new Error(
        `Specified ReservedConcurrentExecutions decrease the account's UnreservedConcurrentExecution below its minimum value of [${minimum}] ` +
          `(pool ${pool}, reserved ${[...scaled].map(([n, r]) => `${n} ${r}`).join(', ')})`,
      );
  }

  /** The share of one function (one object per name). */
  of(name: string): FunctionConcurrency {
    let share = this.shares.get(name);
    if (!share) {
      share = this.reservations.has(name) ? this.reservedShare(this.reservations.get(name)!) : this.unreservedShare();
      this.shares.set(name, share);
    }
    return share;
  }

  /** Throttles so far, by function name (only those throttled). */
  throttlesByFunction(): Record<string, number> {
    return Object.fromEntries([...this.shares].filter(([, s]) => s.throttles > 0).map(([n, s]) => [n, s.throttles]));
  }

  private reservedShare(reserved: number): FunctionConcurrency {
    let inUse = 0;
    let throttles = 0;
    return {
      limit: reserved,
      reserved,
      tryAcquire: () => {
        if (inUse >= reserved) {
          throttles += 1;
          return false;
        }
        inUse += 1;
        return true;
      },
      release: () => {
        inUse -= 1;
      },
      get throttles() {
        return throttles;
      },
    };
  }

  private unreservedShare(): FunctionConcurrency {
    let throttles = 0;
    return {
      limit: this.unreserved,
      tryAcquire: () => {
        if (this.unreservedInUse >= this.unreserved) {
          throttles += 1;
          return false;
        }
        this.unreservedInUse += 1;
        return true;
      },
      release: () => {
        this.unreservedInUse -= 1;
      },
      get throttles() {
        return throttles;
      },
    };
  }
}

/** AWS keeps 100 of 1,000 unreserved: here 10% of the pool, at least 1. */
export function minimumUnreserved(pool: number): number {
  return Math.max(1, Math.ceil(pool / 10));
}

/** The pool `TOOLRUNNER_ACCOUNT_CONCURRENCY` asks for (default 50), validated. */
export function accountConcurrencyFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const parsed = z.coerce
    .number()
    .int()
    .min(2)
    .max(100_000)
    .default(DEFAULT_ACCOUNT_CONCURRENCY)
    .safeParse(env.TOOLRUNNER_ACCOUNT_CONCURRENCY);
  if (!parsed.success)
    throw new Error(`TOOLRUNNER_ACCOUNT_CONCURRENCY: a whole number from 2 to 100000 (got ${env.TOOLRUNNER_ACCOUNT_CONCURRENCY})`);
  return parsed.data;
}
