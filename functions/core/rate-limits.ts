import { sha256 } from './canonical';
import type { RateLimit } from './config';

/**
 * Rate limits on tool calls (the config's `rateLimits`), as pure decisions: which limits a call counts
 * against, the keys of their counters and slots, the minute a count falls in, and when to retry. The
 * commands layer takes them from the store (commands/rate-limit-gate.ts); docs/reference/config.md says
 * what each field means.
 *
 * A limit's scope: `tool` omitted counts every tool together, `"*"` each tool on its own, a name only that
 * tool; the same for `principal` (the caller who submits, `requestedBy`).
 */

/** What a call is counted as: the tool it names and the principal who submits it. */
export interface RateSubject {
  tool: string;
  principal: string;
}

/** One thing to take before a call is admitted: a count in this minute's counter, or a slot while it runs. */
export type RateTake =
  | { kind: 'perMinute'; scope: string; limit: number; counterKey: string; expiresAtEpoch: number }
  | { kind: 'concurrent'; scope: string; slots: number; slotKeys: string[] };

/** How long a minute's counter outlives its minute: a clock a little behind still finds it. */
const COUNTER_TTL_SECONDS = 5 * 60;
/** Longer names are hashed, so a key stays far below DynamoDB's 2 KiB partition key. */
const MAX_NAME_IN_KEY = 200;

function keyPart(name: string): string {
  const encoded = encodeURIComponent(name);
  return encoded.length > MAX_NAME_IN_KEY ? sha256(name) : encoded;
}

/** One side of a scope: `all` (omitted), `each=<name>` (`"*"`), `is=<name>` (a name); undefined if it does not match. */
function side(pattern: string | undefined, name: string): string | undefined {
  if (pattern === undefined) return 'all';
  if (pattern === '*') return `each=${keyPart(name)}`;
  return pattern === name ? `is=${keyPart(name)}` : undefined;
}

/**
 * The counter scope of a limit for this call, or undefined when the limit does not apply to it. Each pattern
 * has its own scope, so a per-tool limit and an every-tool limit never share (and never double-count) a counter.
 */
export function scopeOf(limit: Pick<RateLimit, 'tool' | 'principal' | 'model'>, subject: RateSubject): string | undefined {
  // An entry naming a model counts model calls only (modelRateTakes).
  if (limit.model !== undefined) return undefined;
  const tool = side(limit.tool, subject.tool);
  const principal = side(limit.principal, subject.principal);
  return tool && principal ? `tool.${tool}|principal.${principal}` : undefined;
}

/** The UTC minute `now` falls in, `yyyy-mm-ddThh:mm`: a perMinute counter counts the calls of one such minute. */
export function minuteBucket(now: number): string {
  return new Date(now).toISOString().slice(0, 16);
}

/** The counter of a scope's calls in the minute of `now`. */
export function counterKey(scope: string, now: number): string {
  return `ratelimit#${scope}#${minuteBucket(now)}`;
}

/** One call counted against a scope's `perMinute` limit, in the counter of `now`'s minute (kept a while past it). */
function perMinuteTake(scope: string, limit: number, now: number): Extract<RateTake, { kind: 'perMinute' }> {
  return {
    kind: 'perMinute',
    scope,
    limit,
    counterKey: counterKey(scope, now),
    expiresAtEpoch: Math.floor(now / 60_000) * 60 + 60 + COUNTER_TTL_SECONDS,
  };
}

/** The `concurrent` slots of a scope: `i` in 0..slots-1. */
export function slotKey(scope: string, i: number): string {
  return `ratelimit-slot#${scope}#${i}`;
}

/** Seconds from `now` to the next UTC minute, at least 1: when a perMinute counter starts again. */
export function secondsToNextMinute(now: number): number {
  const next = Math.floor(now / 60_000) * 60_000 + 60_000;
  return Math.max(1, Math.ceil((next - now) / 1000));
}

/** When a refused call may try again: the next minute for a perMinute limit; a second for a concurrent one (a slot may free any time). */
export function retryAfterSeconds(take: Pick<RateTake, 'kind'>, now: number): number {
  return take.kind === 'perMinute' ? secondsToNextMinute(now) : 1;
}

/**
 * What a call must take before it is admitted, in the config's order: for every limit that applies, a count
 * in this minute's counter (`perMinute`) and a slot (`concurrent`). The slots are tried from `start` on
 * (a number in [0, 1), spreading concurrent callers over the slots instead of all racing for slot 0).
 *
 * A call that `waitsForPerson` (its approval) takes no slot of a `concurrent` limit that every principal
 * shares (`principal` omitted): it would hold it until a person decides or its deadline passes, so one
 * agent's pending approvals would block everyone. A limit per principal (`"*"` or a name) still counts it.
 */
export function rateTakes(
  limits: readonly RateLimit[] | undefined,
  subject: RateSubject,
  now: number,
  start = 0,
  options: { waitsForPerson?: boolean } = {},
): RateTake[] {
  const takes: RateTake[] = [];
  for (const limit of limits ?? []) {
    const scope = scopeOf(limit, subject);
    if (!scope) continue;
    const shared = limit.principal === undefined;
    if (limit.perMinute !== undefined) takes.push(perMinuteTake(scope, limit.perMinute, now));
    if (limit.concurrent !== undefined && !(options.waitsForPerson && shared)) {
      const first = Math.min(limit.concurrent - 1, Math.floor(start * limit.concurrent));
      const slotKeys = Array.from({ length: limit.concurrent }, (_, i) => slotKey(scope, (first + i) % limit.concurrent!));
      takes.push({ kind: 'concurrent', scope, slots: limit.concurrent, slotKeys });
    }
  }
  return takes;
}

/** What a model call is counted as: the model it reserves (as requested) and the principal who reserves it. */
export interface ModelRateSubject {
  model: string;
  principal: string;
}

/** The perMinute counts a model call takes: only entries that name a model count model calls. */
export function modelRateTakes(
  limits: readonly RateLimit[] | undefined,
  subject: ModelRateSubject,
  now: number,
): Extract<RateTake, { kind: 'perMinute' }>[] {
  const takes: Extract<RateTake, { kind: 'perMinute' }>[] = [];
  for (const limit of limits ?? []) {
    if (limit.model === undefined || limit.perMinute === undefined) continue;
    const model = side(limit.model, subject.model);
    const principal = side(limit.principal, subject.principal);
    if (!model || !principal) continue;
    const scope = `model.${model}|principal.${principal}`;
    takes.push(perMinuteTake(scope, limit.perMinute, now));
  }
  return takes;
}

/** What a throttled submission answers (HTTP 429 `throttled`, MCP `isError`): which limit, and when to retry. */
export function throttledMessage(take: RateTake, subject: RateSubject, retryAfter: number): string {
  const what =
    take.kind === 'perMinute'
      ? `at most ${take.limit} call${take.limit === 1 ? '' : 's'} a minute`
      : `at most ${take.slots} call${take.slots === 1 ? '' : 's'} in flight`;
  return `throttled: ${subject.tool} for ${subject.principal} is over its rate limit (${what}); retry in ${retryAfter} s`;
}
