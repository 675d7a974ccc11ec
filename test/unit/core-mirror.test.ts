import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

// Every module of the pure core has a unit test of the same name: test/unit/core/<module>.test.ts (but the
// probe the layering test places there for a moment, which it removes).
describe('the unit tests mirror functions/core', () => {
  it.each(readdirSync(join(root, 'functions/core')).filter((f) => f.endsWith('.ts') && !f.startsWith('layering-probe-')))(
    '%s has its test file',
    (file) => {
      expect(existsSync(join(root, 'test/unit/core', file.replace(/\.ts$/, '.test.ts')))).toBe(true);
    },
  );
});
