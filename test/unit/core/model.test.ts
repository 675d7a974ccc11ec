import { describe, expect, it } from 'vitest';
import { Risk, SCHEMA_VERSION } from '../../../functions/core/model';

// model.ts is the core's types; what exists at run time is the risk classes and the record schema version.
describe('the model', () => {
  it('has the three risk classes the tool spec takes, and records at schema version 2', () => {
    expect(Object.values(Risk).sort()).toEqual(['irreversible_write', 'read', 'reversible_write']);
    expect(SCHEMA_VERSION).toBe(2);
  });
});
