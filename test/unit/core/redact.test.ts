import { describe, expect, it } from 'vitest';
import { MASK, redact } from '../../../functions/core/redact';

describe('redact', () => {
  it('masks values under secret-looking keys at any depth and keeps the rest', () => {
    expect(redact({ customer: 'cus_1', apiKey: 'sk_live_x', nested: [{ password: 'p', note: 'ok' }], Authorization: 'Bearer t' })).toEqual({
      customer: 'cus_1',
      apiKey: MASK,
      nested: [{ password: MASK, note: 'ok' }],
      Authorization: MASK,
    });
  });

  it('masks card-like numbers to their last four digits, in strings and in numbers', () => {
    expect(redact('card 4242 4242 4242 4242 please')).toBe(`card ${MASK}4242 please`);
    expect(redact(4242424242424242)).toBe(`${MASK}4242`);
    expect(redact(1200)).toBe(1200);
  });

  it('stops at depth 32 instead of walking forever', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = { a: deep };
    expect(JSON.stringify(redact(deep))).toContain(MASK);
  });
});
