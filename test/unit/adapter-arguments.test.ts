import { describe, expect, it } from 'vitest';
import { withoutNullOptionals } from '../../functions/agents/runner-tools';

/**
 * The adapters drop a strict-mode model's nulls before the runner sees the arguments: only for fields the tool
 * declares as optional, so a key the tool does not take reaches the runner and is refused there as it is on
 * every other surface (HTTP, MCP).
 */
describe('the adapters’ arguments', () => {
  const lookup = { optional: ['limit', 'note'] };

  it('drop the null of a declared optional field', () => {
    expect(withoutNullOptionals(lookup, { q: 'a', limit: null, note: 'x' })).toEqual({ q: 'a', note: 'x' });
  });

  it('keep a required field’s null and a key the tool does not declare, for the runner to refuse', () => {
    expect(withoutNullOptionals(lookup, { q: null, extra: null })).toEqual({ q: null, extra: null });
  });

  it('pass anything but an object unchanged', () => {
    expect(withoutNullOptionals(lookup, '{"q":1}')).toBe('{"q":1}');
    expect(withoutNullOptionals(lookup, [null])).toEqual([null]);
  });
});
