import { describe, expect, it } from 'vitest';
import {
  describeBytes,
  measureSerialized,
  RESULT_LIMITS,
  resultBlobKey,
  serializeBounded,
  storedResultOf,
} from '../../../functions/core/result-record';

describe('recorded results', () => {
  it('serialize canonically with their size and hash', () => {
    const a = serializeBounded({ b: 1, a: [true, null] });
    const b = serializeBounded({ a: [true, null], b: 1 });
    expect(a).toEqual(b);
    expect(a).toMatchObject({ ok: true, json: '{"a":[true,null],"b":1}', bytes: 23 });
    if (a.ok) expect(a.sha256).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('refuse what cannot be recorded: cycles, BigInt, too large, too deep', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(serializeBounded(cyclic).ok).toBe(false);
    expect(serializeBounded({ n: 1n }).ok).toBe(false);
    expect(serializeBounded('x'.repeat(100), 50).ok).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < RESULT_LIMITS.maxDepth + 5; i++) deep = [deep];
    expect(serializeBounded(deep).ok).toBe(false);
    expect(storedResultOf(undefined)).toBeUndefined();
  });

  it('name sizes for people and give each result its own blob key', () => {
    expect(describeBytes(5 * 1024 * 1024)).toBe('5 MiB');
    expect(describeBytes(256 * 1024)).toBe('256 KiB');
    expect(describeBytes(100)).toBe('100 bytes');
    expect(resultBlobKey('op_1', 'attempt-2', 'sha256:0123456789abcdef0123')).toBe('results/op_1/attempt-2-0123456789abcdef.json');
  });

  it('are measured (size and hash) without being held, exactly as they serialize, whatever an object leaves out', () => {
    const values: unknown[] = [
      { b: 1, a: [true, null, undefined, () => 1], c: undefined, d: { toJSON: () => 'x' }, é: 'ü\u{1F600}' },
      [undefined, Symbol('s'), Number.NaN, { only: undefined }],
      'x'.repeat(10_000),
      { z: { y: { x: [1, { w: undefined, v: 2 }] } } },
    ];
    for (const value of values) {
      const whole = serializeBounded(value);
      expect(whole.ok).toBe(true);
      if (whole.ok)
        expect(measureSerialized(value, RESULT_LIMITS.maxRecordedBytes)).toEqual({ ok: true, bytes: whole.bytes, sha256: whole.sha256 });
    }
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(measureSerialized(cyclic, 1024)).toMatchObject({ ok: false, message: expect.stringContaining('cycle') });
    expect(measureSerialized('x'.repeat(100), 50)).toMatchObject({ ok: false, message: expect.stringContaining('larger than 50 bytes') });
  });
});
