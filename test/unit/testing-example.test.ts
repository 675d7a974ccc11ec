import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// The example registers its own tests here: the doc's example runs in the suite.
import '../../examples/tool-tests';

const root = join(import.meta.dirname, '../..');

describe('docs/testing.md', () => {
  it('quotes examples/tool-tests.ts verbatim', () => {
    const doc = readFileSync(join(root, 'docs/testing.md'), 'utf8');
    const block = doc.match(/A vitest file \(`examples\/tool-tests\.ts`[^\n]*\n[^\n]*\n\n```ts\n([\s\S]*?)```\n/)?.[1];
    expect(block).toBe(readFileSync(join(root, 'examples/tool-tests.ts'), 'utf8'));
  });
});
