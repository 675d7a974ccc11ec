import { z } from 'zod';

/**
 * `TOOLRUNNER_ACCOUNT_CONCURRENCY`'s default: an account of quota 50 (some new accounts get it), whose whole
 * pool a two-core machine can run; AWS's usual default is 1,000, new accounts may get 10.
 */
export const DEFAULT_ACCOUNT_CONCURRENCY = 50;
/** `TOOLRUNNER_MAX_INSTANCES`'s default: execution environments of one function a two-core machine can start. */
export const DEFAULT_MAX_INSTANCES = 50;

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

/** The account as template mode models it: its quota, and what other stacks (or functions) in it reserve. */
export interface AccountQuota {
  /** `TOOLRUNNER_ACCOUNT_CONCURRENCY`: the account's concurrent executions quota. */
  quota: number;
  /** `TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE`: reserved by functions outside this template (another runner's). */
  reservedElsewhere?: number;
}

/**
 * One account's concurrency pool, as Lambda keeps it: every function with `ReservedConcurrentExecutions` has
 * that many for itself and never more; the others share what is left. The reservations apply as written (no
 * scaling): a template that leaves less than AWS's unreserved minimum is refused with AWS's own message, as
 * the first reserved function of a deploy into that account would be.
 */
export class AccountConcurrency {
  private readonly shares = new Map<string, FunctionConcurrency>();
  readonly pool: number;
  readonly reservedElsewhere: number;
  readonly unreserved: number;
  /** The template's reservations, by function name. */
  readonly reservations: ReadonlyMap<string, number>;
  private unreservedInUse = 0;

  constructor(account: number | AccountQuota, reservedByFunction: ReadonlyMap<string, number>) {
    const { quota, reservedElsewhere = 0 } = typeof account === 'number' ? { quota: account } : account;
    this.pool = quota;
    this.reservedElsewhere = reservedElsewhere;
    this.reservations = reservedByFunction;
    const minimum = minimumUnreserved(quota);
    const ownReserved = [...reservedByFunction.values()].reduce((a, b) => a + b, 0);
    if (quota - reservedElsewhere < minimum)
      throw new Error(
        `TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE (${reservedElsewhere}) leaves the account (quota ${quota}) below its unreserved minimum of ${minimum}`,
      );
    // AWS checks each function as it creates it: the first reservation that breaks the rule fails the deploy.
    let reservedSoFar = reservedElsewhere;
    for (const [name, reserved] of reservedByFunction) {
      reservedSoFar += reserved;
      if (quota - reservedSoFar < minimum)
        throw new Error(
          `Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [${minimum}] ` +
            `(function ${name}; quota ${quota}, reserved elsewhere ${reservedElsewhere}, reserved here ${ownReserved})`,
        );
    }
    this.unreserved = quota - reservedElsewhere - ownReserved;
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

/**
 * What AWS keeps unreserved: 100, or the whole quota below 100 (a new account of quota 10 is refused
 * `...below its minimum value of [10]`, so it can reserve nothing).
 */
export function minimumUnreserved(quota: number): number {
  return Math.min(100, quota);
}

const count = (name: string, min: number, fallback: number, env: NodeJS.ProcessEnv) => {
  const parsed = z.coerce.number().int().min(min).max(1_000_000).default(fallback).safeParse(env[name]);
  if (!parsed.success) throw new Error(`${name}: a whole number from ${min} to 1000000 (got ${env[name]})`);
  return parsed.data;
};

/** The account template mode deploys into: `TOOLRUNNER_ACCOUNT_CONCURRENCY` (default 50) and `TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE` (default 0). */
export function accountFromEnv(env: NodeJS.ProcessEnv = process.env): Required<AccountQuota> {
  return {
    quota: count('TOOLRUNNER_ACCOUNT_CONCURRENCY', 1, DEFAULT_ACCOUNT_CONCURRENCY, env),
    reservedElsewhere: count('TOOLRUNNER_ACCOUNT_RESERVED_ELSEWHERE', 0, 0, env),
  };
}

/** `TOOLRUNNER_MAX_INSTANCES` (default 50): execution environments started here per function, whatever its share. */
export function maxInstancesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return count('TOOLRUNNER_MAX_INSTANCES', 1, DEFAULT_MAX_INSTANCES, env);
}
