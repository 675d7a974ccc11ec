import { writeFileSync } from 'node:fs';
import { openApiDocument } from '../functions/api/openapi';

/** `npm run docs:openapi`: regenerates docs/openapi.json, the copy of `GET /v1/openapi.json` kept in the repo. */
const path = new URL('../docs/openapi.json', import.meta.url);
writeFileSync(path, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log('wrote docs/openapi.json');
