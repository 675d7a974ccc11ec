import './env-defaults';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ensureConfig, startStack } from './stack';

/** Local runtime knobs: scripts outside the repo drive `npm start` with these (README "Local knobs"). */
const Knobs = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  SANDBOX_PORT: z.coerce.number().int().min(1).max(65535).default(3001),
  TOOLRUNNER_DATA_DIR: z.string().min(1).default('.local/'),
  TOOLRUNNER_CONFIG: z.string().min(1).default('toolrunner.local.json'),
  /** `bundled` runs every Lambda handler from the bundle CDK deploys (same esbuild options). */
  TOOLRUNNER_HANDLERS: z.enum(['source', 'bundled']).default('source'),
});

async function main(): Promise<void> {
  const parsed = Knobs.safeParse(process.env);
  if (!parsed.success) {
    console.error(`npm start: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    process.exit(2);
  }
  const knobs = parsed.data;
  const configPath = resolve(knobs.TOOLRUNNER_CONFIG);
  const { created } = ensureConfig(configPath);
  const stack = await startStack({ dataDir: resolve(knobs.TOOLRUNNER_DATA_DIR), configPath, port: knobs.PORT, sandboxPort: knobs.SANDBOX_PORT, handlers: knobs.TOOLRUNNER_HANDLERS });

  const agent = (JSON.parse(readFileSync(configPath, 'utf8')) as { principals: { id: string; key: string; roles: string[] }[] }).principals.find((p) => p.roles.includes('agent'));
  console.log(`keys: ${configPath}${created ? ' (created with random keys)' : ''}`);
  if (stack.recovered.length) console.log(`recovered ${stack.recovered.length} operation(s) interrupted by the last shutdown`);
  if (agent) {
    console.log('try:');
    console.log(`  RUN=$(curl -s -X POST ${stack.apiUrl}/v1/runs -H 'Authorization: Bearer ${agent.key}' | sed -E 's/.*"runId":"([^"]+)".*/\\1/')`);
    console.log(`  curl -s -X POST ${stack.apiUrl}/v1/runs/$RUN/tool-calls -H 'Authorization: Bearer ${agent.key}' -H 'Content-Type: application/json' -d '{"callId":"call_1","turn":1,"name":"get_order","arguments":{"orderId":"ord_1"}}'`);
  }
  console.log(`handlers: ${stack.handlers}`);
  console.log(`ready: api=${stack.apiUrl} sandbox=${stack.sandboxUrl}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    try {
      await stack.stop();
      process.exit(0);
    } catch (error) {
      console.error(`shutdown failed: ${(error as Error).message}`);
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: Error) => {
  console.error(`npm start failed: ${error.message}`);
  process.exit(1);
});
