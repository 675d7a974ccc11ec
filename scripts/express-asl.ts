import { writeFileSync } from 'node:fs';
import { EXPRESS_ASL_PATH, readDefinition } from '../statemachines/definition';
import { expressDefinition } from '../statemachines/express';

/** `npm run asl:express`: regenerates the Express variant from the Standard definition. */
writeFileSync(EXPRESS_ASL_PATH, expressDefinition(readDefinition()));
console.log(`wrote ${EXPRESS_ASL_PATH}`);
