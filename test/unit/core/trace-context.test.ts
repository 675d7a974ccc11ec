import { describe, expect, it } from 'vitest';
import { validTraceparent } from '../../../functions/core/trace-context';

describe('validTraceparent', () => {
  it('keeps a W3C version-00 traceparent, normalized to lower case', () => {
    const header = '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01';
    expect(validTraceparent(` ${header} `)).toBe(header.toLowerCase());
  });

  it('ignores all-zero ids, other versions and garbage rather than refusing the call', () => {
    for (const bad of [
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'nonsense',
      undefined,
    ])
      expect(validTraceparent(bad)).toBeUndefined();
  });
});
