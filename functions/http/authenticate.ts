import { createHash, timingSafeEqual } from 'node:crypto';
import type { RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';
import { findPrincipal } from '../core/policy';

/**
 * Who a request is: the one authentication every surface (the API, `/mcp`, the console's sign-in) shares,
 * so a key means the same principal wherever it is presented.
 */

function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** Finds the principal for a bearer key; compares digests in constant time. */
export function principalForKey(config: RunnerConfig, key: string): Principal | undefined {
  const digest = keyDigest(key);
  return findPrincipal(config, (p) => timingSafeEqual(keyDigest(p.key), digest));
}

/** The key of an `Authorization: Bearer <key>` header, or undefined for any other shape. */
export function bearerKeyOf(header: string | undefined): string | undefined {
  return (header ?? '').match(/^Bearer\s+(\S+)$/i)?.[1];
}
