import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../../functions/core/config';
import {
  counterKey,
  minuteBucket,
  rateTakes,
  retryAfterSeconds,
  scopeOf,
  secondsToNextMinute,
  slotKey,
  throttledMessage,
} from '../../../functions/core/rate-limits';

const now = Date.parse('2026-11-30T12:34:20.250Z');
const alice = { tool: 'send_email', principal: 'alice' };

describe('rate limits', () => {
  it('scopes a limit by its patterns: omitted counts together, "*" each on its own, a name only that one', () => {
    expect(scopeOf({}, alice)).toBe('tool.all|principal.all');
    expect(scopeOf({ tool: '*' }, alice)).toBe('tool.each=send_email|principal.all');
    expect(scopeOf({ principal: '*' }, alice)).toBe('tool.all|principal.each=alice');
    expect(scopeOf({ tool: 'send_email', principal: 'alice' }, alice)).toBe('tool.is=send_email|principal.is=alice');
    expect(scopeOf({ tool: 'other' }, alice)).toBeUndefined();
    expect(scopeOf({ principal: 'bob' }, alice)).toBeUndefined();
    // "*" and the tool's own name are two limits, never one counter.
    expect(scopeOf({ tool: '*' }, alice)).not.toBe(scopeOf({ tool: 'send_email' }, alice));
    // Each principal its own counter under "*"; every principal one counter when omitted.
    expect(scopeOf({ principal: '*' }, { ...alice, principal: 'bob' })).not.toBe(scopeOf({ principal: '*' }, alice));
    expect(scopeOf({}, { ...alice, principal: 'bob' })).toBe(scopeOf({}, alice));
  });

  it('keeps names that would break a key out of it: separators encoded, long names hashed', () => {
    expect(scopeOf({ principal: '*' }, { tool: 't', principal: 'oauth:a#b|c' })).toBe('tool.all|principal.each=oauth%3Aa%23b%7Cc');
    const long = scopeOf({ principal: '*' }, { tool: 't', principal: 'x'.repeat(1000) })!;
    expect(long).toMatch(/^tool\.all\|principal\.each=sha256:[0-9a-f]{64}$/);
  });

  it('counts per UTC minute, and says when the next one starts', () => {
    expect(minuteBucket(now)).toBe('2026-11-30T12:34');
    expect(counterKey('s', now)).toBe('ratelimit#s#2026-11-30T12:34');
    expect(counterKey('s', Date.parse('2026-11-30T12:35:00Z'))).toBe('ratelimit#s#2026-11-30T12:35');
    expect(secondsToNextMinute(now)).toBe(40);
    expect(secondsToNextMinute(Date.parse('2026-11-30T12:34:59.900Z'))).toBe(1);
    expect(secondsToNextMinute(Date.parse('2026-11-30T12:35:00Z'))).toBe(60);
    expect(retryAfterSeconds({ kind: 'perMinute' }, now)).toBe(40);
    expect(retryAfterSeconds({ kind: 'concurrent' }, now)).toBe(1);
  });

  it('lists what a call must take, in the config order, and nothing for limits that do not apply', () => {
    const takes = rateTakes(
      [
        { tool: 'send_email', perMinute: 3, concurrent: 2 },
        { tool: 'other', perMinute: 1 },
        { principal: '*', perMinute: 10 },
      ],
      alice,
      now,
    );
    expect(takes).toEqual([
      {
        kind: 'perMinute',
        scope: 'tool.is=send_email|principal.all',
        limit: 3,
        counterKey: 'ratelimit#tool.is=send_email|principal.all#2026-11-30T12:34',
        // The end of the minute (12:35:00) and five more.
        expiresAtEpoch: Date.parse('2026-11-30T12:40:00Z') / 1000,
      },
      {
        kind: 'concurrent',
        scope: 'tool.is=send_email|principal.all',
        slots: 2,
        slotKeys: [slotKey('tool.is=send_email|principal.all', 0), slotKey('tool.is=send_email|principal.all', 1)],
      },
      expect.objectContaining({ kind: 'perMinute', scope: 'tool.all|principal.each=alice', limit: 10 }),
    ]);
    expect(rateTakes(undefined, alice, now)).toEqual([]);
    expect(rateTakes([{ tool: 'other', concurrent: 1 }], alice, now)).toEqual([]);
  });

  it('tries every slot once, from where `start` points', () => {
    const keys = (start: number) =>
      (rateTakes([{ concurrent: 4 }], alice, now, start)[0] as { slotKeys: string[] }).slotKeys.map((k) => k.split('#').at(-1));
    expect(keys(0)).toEqual(['0', '1', '2', '3']);
    expect(keys(0.5)).toEqual(['2', '3', '0', '1']);
    expect(keys(0.999)).toEqual(['3', '0', '1', '2']);
  });

  it('a call waiting for a person takes no slot every principal shares, but its per-principal slots and counts', () => {
    const limits = [{ concurrent: 1 }, { principal: '*', concurrent: 1 }, { principal: 'alice', concurrent: 2, perMinute: 5 }];
    const kinds = (waitsForPerson: boolean) => rateTakes(limits, alice, now, 0, { waitsForPerson }).map((t) => `${t.kind} ${t.scope}`);
    expect(kinds(false)).toEqual([
      'concurrent tool.all|principal.all',
      'concurrent tool.all|principal.each=alice',
      'perMinute tool.all|principal.is=alice',
      'concurrent tool.all|principal.is=alice',
    ]);
    expect(kinds(true)).toEqual([
      'concurrent tool.all|principal.each=alice',
      'perMinute tool.all|principal.is=alice',
      'concurrent tool.all|principal.is=alice',
    ]);
  });

  it('tells the caller which limit and when to retry', () => {
    const [perMinute] = rateTakes([{ perMinute: 1 }], alice, now);
    expect(throttledMessage(perMinute, alice, 40)).toBe(
      'throttled: send_email for alice is over its rate limit (at most 1 call a minute); retry in 40 s',
    );
    const [concurrent] = rateTakes([{ concurrent: 2 }], alice, now);
    expect(throttledMessage(concurrent, alice, 1)).toContain('at most 2 calls in flight');
  });

  it('is configured as rateLimits: each entry needs a limit, positive integers, one entry per scope', () => {
    const config = (rateLimits: unknown) => RunnerConfigSchema.safeParse({ principals: [], rateLimits });
    expect(
      config([
        { tool: 'a', perMinute: 5 },
        { principal: '*', concurrent: 2 },
      ]).success,
    ).toBe(true);
    expect(config([{ tool: 'a' }]).success).toBe(false);
    expect(config([{ perMinute: 0 }]).success).toBe(false);
    expect(config([{ concurrent: 1.5 }]).success).toBe(false);
    expect(config([{ perMinute: 1, burst: 2 }]).success).toBe(false);
    expect(config(Array.from({ length: 101 }, (_, i) => ({ tool: `t${i}`, perMinute: 1 }))).success).toBe(false);
    const duplicate = config([
      { tool: 'a', perMinute: 5 },
      { tool: 'a', concurrent: 1 },
    ]);
    expect(duplicate.success).toBe(false);
    expect(duplicate.error?.issues[0]).toMatchObject({ path: ['rateLimits', 1] });
  });
});
