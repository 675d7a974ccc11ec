import { describe, expect, it } from 'vitest';
import { canonicalJson, deepFreeze, hashValue, parseArguments } from '../../../functions/core/canonical';

describe('canonical JSON and hashes', () => {
  it('sorts keys at every depth, so equal values hash equally', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}');
    expect(hashValue({ x: 1, y: 2 })).toBe(hashValue({ y: 2, x: 1 }));
    expect(hashValue({ x: 1 })).not.toBe(hashValue({ x: 2 }));
    expect(hashValue([1, 2])).not.toBe(hashValue([2, 1]));
    expect(hashValue({})).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('parses arguments given as an object or as a JSON string', () => {
    expect(parseArguments({ a: 1 })).toEqual({ ok: true, value: { a: 1 } });
    expect(parseArguments('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseArguments('{"a":')).toEqual({ ok: false, message: 'arguments is not valid JSON' });
  });

  it('freezes deeply', () => {
    const value = deepFreeze({ a: { b: [1] } });
    expect(Object.isFrozen(value.a.b)).toBe(true);
    expect(() => {
      (value.a.b as number[]).push(2);
    }).toThrow();
  });
});

describe('canonical JSON under hostile input', () => {
  it('keeps __proto__ as an ordinary key, so different payloads never hash alike', () => {
    const payloads = ['{"__proto__":{"amount":1}}', '{"__proto__":{"amount":2}}', '{"__proto__":null}', '{}'].map((t) => JSON.parse(t));
    expect(canonicalJson(payloads[0])).toBe('{"__proto__":{"amount":1}}');
    expect(new Set(payloads.map(hashValue)).size).toBe(4);
  });

  it('serializes 100,000 levels of nesting without overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: [deep] };
    expect(canonicalJson(deep)).toHaveLength(100_000 * '{"a":[]}'.length + 1);
    expect(() => deepFreeze(deep)).not.toThrow();
  });

  it('orders keys exactly as the first version did, so stored hashes stay valid', () => {
    expect(canonicalJson({ b: 1, 10: 2, 9: 3, a: undefined, c: [undefined] })).toBe('{"9":3,"10":2,"b":1,"c":[null]}');
    expect(hashValue({ amount: 4200, currency: 'EUR', customer: 'cus_9' })).toBe(
      hashValue(JSON.parse('{"customer":"cus_9","currency":"EUR","amount":4200}')),
    );
  });
});
