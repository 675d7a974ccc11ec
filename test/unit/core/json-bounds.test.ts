import { describe, expect, it } from 'vitest';
import { checkJsonBounds, isSaneId, JSON_BOUNDS, nestingDepth, parseBoundedJson } from '../../../functions/core/json-bounds';

const nested = (depth: number) => `${'['.repeat(depth - 1)}{"a":1}${']'.repeat(depth - 1)}`;

describe('JSON bounds', () => {
  it('measures nesting on the text, skipping brackets inside strings and escapes', () => {
    expect(nestingDepth('{"a":[1,{"b":"[[[{{{"}]}')).toBe(3);
    expect(nestingDepth('"\\"[[["')).toBe(0);
    expect(nestingDepth(nested(10_000), 32)).toBe(33);
  });

  it('refuses 33 levels (DynamoDB stores 32) and 100,000 levels without overflowing', () => {
    expect(parseBoundedJson(nested(32))).toMatchObject({ ok: true });
    expect(parseBoundedJson(nested(33))).toEqual({ ok: false, reason: 'bounds', message: 'body: nested deeper than 32 levels' });
    expect(parseBoundedJson(nested(100_000))).toMatchObject({ ok: false, reason: 'bounds' });
    // An already-built deep value (not from text) is refused by the iterative walk.
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(checkJsonBounds(deep)).toMatchObject({ ok: false });
  });

  it.each(['1e20', '9007199254740993', '-9007199254740993', '1e309', '-1e309', '5e-324', '1e-200'])('refuses the number %s', (n) => {
    const parsed = parseBoundedJson(`{"arguments":{"amount":${n}}}`);
    expect(parsed).toMatchObject({ ok: false, reason: 'bounds', message: expect.stringMatching(/^arguments\.amount: the number /) });
  });

  it.each(['0', '-0', '9007199254740991', '-9007199254740991', '0.1', '1e-130', '123.456'])('accepts the number %s', (n) => {
    expect(parseBoundedJson(`{"a":${n}}`)).toMatchObject({ ok: true });
  });

  it.each(['__proto__', 'constructor', 'prototype', ''])('refuses the key %j at any depth', (key) => {
    expect(parseBoundedJson(`{"a":[{"b":{${JSON.stringify(key)}:1}}]}`)).toMatchObject({
      ok: false,
      reason: 'bounds',
      message: expect.stringContaining('is not allowed'),
    });
  });

  it('tells syntax errors from hostile documents, and never echoes a value', () => {
    expect(parseBoundedJson('{"a":')).toMatchObject({ ok: false, reason: 'syntax' });
    const secret = 'tr_secret_value';
    const parsed = parseBoundedJson(`{"${secret}":{"x":1e400}}`);
    expect(parsed.ok).toBe(false);
    expect(JSON.stringify(parsed)).not.toContain('1e400');
    expect(parseBoundedJson(`{"${'k'.repeat(JSON_BOUNDS.maxKeyLength + 1)}":1}`)).toMatchObject({ ok: false });
  });

  it('accepts only ids the API could have issued', () => {
    expect(isSaneId('run_abc-DEF_123')).toBe(true);
    for (const bad of [undefined, '', 'a'.repeat(129), 'a'.repeat(3000), 'run/1', 'run 1', 'rün', '..']) expect(isSaneId(bad)).toBe(false);
  });
});
