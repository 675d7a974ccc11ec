import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lifecycleDiagram, withDiagram } from '../functions/core/lifecycle-diagram';

// npm run docs:lifecycle: redraws the lifecycle in docs/architecture.md from the transition table.
const file = join(import.meta.dirname, '../docs/architecture.md');
writeFileSync(file, withDiagram(readFileSync(file, 'utf8'), lifecycleDiagram()));
console.log(`lifecycle diagram written to ${file}`);
