import { OperationState, SETTLED, TRANSITIONS } from './lifecycle';

/** The markers between which docs/architecture.md holds the generated diagram. */
export const DIAGRAM_MARKERS = { start: '<!-- lifecycle-diagram:start -->', end: '<!-- lifecycle-diagram:end -->' } as const;

/**
 * The lifecycle as a Mermaid `stateDiagram-v2`, drawn from the transition table itself (lifecycle.ts), so
 * the picture in the docs cannot drift from what `moveTo` allows: one arrow per allowed move.
 */
export function lifecycleDiagram(): string {
  const lines = ['```mermaid', 'stateDiagram-v2', `    [*] --> ${OperationState.proposed}`];
  for (const [from, targets] of Object.entries(TRANSITIONS)) {
    for (const to of targets) lines.push(`    ${from} --> ${to}`);
  }
  lines.push(`    ${OperationState.reported} --> [*]`);
  lines.push(
    `    note right of ${OperationState.outcomeUnknown}: not terminal - reconciled, retried with the same key, or a person decides`,
  );
  lines.push(`    classDef settled font-weight:bold`);
  lines.push(`    class ${SETTLED.join(',')} settled`);
  lines.push('```');
  return lines.join('\n');
}

/** `doc` with the diagram between its markers replaced by `diagram`; throws when the markers are missing. */
export function withDiagram(doc: string, diagram: string): string {
  const start = doc.indexOf(DIAGRAM_MARKERS.start);
  const end = doc.indexOf(DIAGRAM_MARKERS.end);
  if (start < 0 || end < start) throw new Error(`the document has no ${DIAGRAM_MARKERS.start} … ${DIAGRAM_MARKERS.end} block`);
  return `${doc.slice(0, start + DIAGRAM_MARKERS.start.length)}\n${diagram}\n${doc.slice(end)}`;
}
