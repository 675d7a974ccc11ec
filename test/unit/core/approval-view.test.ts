import { describe, expect, it } from 'vitest';
import { argumentLine, argumentsForApprover, FOLD_AFTER_CHARS } from '../../../functions/core/approval-view';

describe('what an approver reads of the arguments', () => {
  it('shows every field exactly, in the arguments own order, with nested paths', () => {
    const fields = argumentsForApprover({
      amount: 2500,
      currency: 'USD',
      address: { line1: '1 Main Street', city: 'Springfield' },
      items: [{ sku: 'A1' }, { sku: 'B2' }],
      note: null,
      tags: [],
      meta: {},
      urgent: false,
    });
    expect(fields).toEqual([
      { path: 'amount', text: '2500', shown: 'exact' },
      { path: 'currency', text: 'USD', shown: 'exact' },
      { path: 'address.line1', text: '1 Main Street', shown: 'exact' },
      { path: 'address.city', text: 'Springfield', shown: 'exact' },
      { path: 'items[0].sku', text: 'A1', shown: 'exact' },
      { path: 'items[1].sku', text: 'B2', shown: 'exact' },
      { path: 'note', text: 'null', shown: 'exact' },
      { path: 'tags', text: '[]', shown: 'exact' },
      { path: 'meta', text: '{}', shown: 'exact' },
      { path: 'urgent', text: 'false', shown: 'exact' },
    ]);
  });

  it('masks the fields the tool marks secret whole, at any depth and in every item', () => {
    const fields = argumentsForApprover(
      { user: 'ann', password: 'hunter2', card: { cvc: '123', brand: 'visa' }, items: [{ pin: '0000' }, { pin: '1111' }] },
      ['password', 'card.cvc', 'items[].pin'],
    );
    expect(fields.map(argumentLine)).toEqual([
      'user: ann',
      'password: ••••',
      'card.cvc: ••••',
      'card.brand: visa',
      'items[0].pin: ••••',
      'items[1].pin: ••••',
    ]);
    // A field named like a secret but not marked is shown exactly: the tool decides.
    expect(argumentsForApprover({ apiKeyName: 'billing' })).toEqual([{ path: 'apiKeyName', text: 'billing', shown: 'exact' }]);
  });

  it('masks card-like numbers to their last four, in strings and in numbers', () => {
    expect(argumentsForApprover({ pan: '4242 4242 4242 4242', n: 4111111111111111, memo: 'card 5555-5555-5555-4444 ok' })).toEqual([
      { path: 'pan', text: '••••4242', shown: 'card' },
      { path: 'n', text: '••••1111', shown: 'card' },
      { path: 'memo', text: 'card ••••4444 ok', shown: 'card' },
    ]);
  });

  it('folds strings longer than 200 characters, with their size in bytes', () => {
    const long = 'é'.repeat(FOLD_AFTER_CHARS + 50);
    const [field] = argumentsForApprover({ body: long });
    expect(field).toEqual({ path: 'body', text: `${'é'.repeat(FOLD_AFTER_CHARS)}…`, shown: 'folded', bytes: 500 });
    expect(argumentLine(field)).toBe(`body: ${'é'.repeat(FOLD_AFTER_CHARS)}… (500 bytes)`);
    expect(argumentsForApprover({ body: 'x'.repeat(FOLD_AFTER_CHARS) })[0].shown).toBe('exact');
  });

  it('shows a bare value and an astral character whole', () => {
    expect(argumentsForApprover('hi 👋').map(argumentLine)).toEqual(['(value): hi 👋']);
  });
});
