import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canTransition, OperationState } from '../../../functions/core/lifecycle';
import { DIAGRAM_MARKERS, lifecycleDiagram, withDiagram } from '../../../functions/core/lifecycle-diagram';

const states = Object.values(OperationState);

describe('the lifecycle diagram', () => {
  it('draws exactly the moves the transition table allows', () => {
    const arrows = new Set(
      lifecycleDiagram()
        .split('\n')
        .map((line) => line.trim().match(/^(\w+) --> (\w+)$/))
        .filter((m) => m !== null)
        .map((m) => `${m[1]}>${m[2]}`),
    );
    for (const from of states) {
      for (const to of states) expect(arrows.has(`${from}>${to}`), `${from} --> ${to}`).toBe(canTransition(from, to));
    }
  });

  it('is current in docs/architecture.md (npm run docs:lifecycle redraws it)', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../../docs/architecture.md'), 'utf8');
    expect(doc).toContain(DIAGRAM_MARKERS.start);
    expect(withDiagram(doc, lifecycleDiagram())).toBe(doc);
  });

  it('refuses a document without its markers', () => {
    expect(() => withDiagram('# no markers here', 'x')).toThrow(/lifecycle-diagram:start/);
  });
});
