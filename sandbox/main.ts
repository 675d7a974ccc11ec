import { resolve } from 'node:path';
import { z } from 'zod';
import { createSandbox } from './server';

/** `npm run sandbox`: the sandbox upstreams alone, for a deployed runner's demo tools to call. */
const knobs = z
  .object({
    SANDBOX_PORT: z.coerce.number().int().min(1).max(65535).default(3001),
    SANDBOX_HOST: z.string().default('127.0.0.1'),
    TOOLRUNNER_DATA_DIR: z.string().default('.local/'),
  })
  .parse(process.env);
const server = createSandbox(resolve(knobs.TOOLRUNNER_DATA_DIR));
server.listen(knobs.SANDBOX_PORT, knobs.SANDBOX_HOST, () => console.log(`sandbox: http://${knobs.SANDBOX_HOST}:${knobs.SANDBOX_PORT}`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
