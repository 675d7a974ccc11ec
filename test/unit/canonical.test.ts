import { describe, expect, it } from 'vitest';
import { canonicalJson, deepFreeze, hashValue, parseArguments } from '../../functions/core/canonical';

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
