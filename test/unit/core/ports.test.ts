import { describe, expect, it } from 'vitest';
import { ContentionError, OperationConflictError, OperationExistsError, RunChangedError } from '../../../functions/core/ports';
import { operation } from '../../support/records';

// The ports are interfaces the adapters implement (held to them by store.test.ts and the in-memory store);
// what runs here are the errors every store throws in the same shape.
describe('the store’s errors', () => {
  it('carry the record that is there now, under names that survive bundling', () => {
    const current = operation({ version: 7 });
    expect(new OperationExistsError(current)).toMatchObject({ name: 'OperationExistsError', current });
    expect(new OperationConflictError(current)).toMatchObject({ name: 'OperationConflictError', current });
    expect(new RunChangedError('budget moved').name).toBe('RunChangedError');
    expect(new ContentionError('busy').name).toBe('ContentionError');
  });
});
