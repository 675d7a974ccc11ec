import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { ToolSpec } from '../functions/core/tool-spec';
import { formatSample } from '../functions/adapters/metrics';
import { startOtlpExport } from '../functions/adapters/otlp-export';
import { guardProcess } from '../functions/handlers/process-guard';
import { claimDataDir, firstPortInUse } from './data-dir-owner';
import { ensureConfig } from './config-file';
import { startStack } from './stack';
import { startSummary } from './summary';

/** Local runtime knobs, shared by `npm start` and `toolrunner start` (the README's "Local knobs"). */
export const Knobs = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  SANDBOX_PORT: z.coerce.number().int().min(1).max(65535).default(3001),
  TOOLRUNNER_DATA_DIR: z.string().min(1).default('.local/'),
  TOOLRUNNER_CONFIG: z.string().min(1).default('toolrunner.local.json'),
  /**
   * `bundled` runs every Lambda handler from the bundle CDK deploys (same esbuild options); `template` builds the
   * whole stack from the synthesized CDK app (functions, routes, state machines, tables, IAM).
   */
  TOOLRUNNER_HANDLERS: z.enum(['source', 'bundled', 'template']).default('source'),
  /** A DynamoDB (Local) already running, instead of the one started in the data directory (`npm run bench` shares its own with the peer). */
  TOOLRUNNER_DYNAMODB_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
});

/**
 * Starts the embedded stack from the knobs, prints the keys file, a try-it line and `ready: ...`, and
 * stops it cleanly on SIGINT or SIGTERM (exit 0). `command` names the caller in messages. Exits with 2 on
 * a bad knob and 1 when the stack fails to start; messages only, never a stack trace.
 */
export async function runEmbeddedStack(command: string, options: { tools?: ToolSpec[] } = {}): Promise<void> {
  const parsed = Knobs.safeParse(process.env);
  if (!parsed.success) {
    console.error(`${command}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    process.exit(2);
  }
  const knobs = parsed.data;
  const configPath = resolve(knobs.TOOLRUNNER_CONFIG);
  let stack: Awaited<ReturnType<typeof startStack>>;
  let created: boolean;
  const dataDir = resolve(knobs.TOOLRUNNER_DATA_DIR);
  // Before anything starts: a port someone else holds, or a data directory another live process owns.
  const busy = await firstPortInUse([
    { port: knobs.PORT, knob: 'PORT' },
    ...(options.tools ? [] : [{ port: knobs.SANDBOX_PORT, knob: 'SANDBOX_PORT' }]),
  ]);
  if (busy) {
    console.error(`${command}: port ${busy.port} (${busy.knob}) is in use on 127.0.0.1; stop what listens there or set ${busy.knob}`);
    process.exit(1);
  }
  let owner: { release(): void };
  try {
    owner = claimDataDir(dataDir);
  } catch (error) {
    console.error(`${command}: ${(error as Error).message}`);
    process.exit(1);
  }
  // A tool's stray rejection or timer exception is logged and attributed; it never ends the stack.
  guardProcess();
  // Everything this process writes in the data directory (the blob store's files, the sandbox's state) is its
  // owner's alone, as DynamoDB Local's files are (its shell sets the same umask).
  process.umask(0o077);
  console.log(`toolrunner: starting the embedded stack (data in ${dataDir})`);
  const otlp = startOtlpExport();
  if (otlp)
    console.log(`  spans: exporting OTLP to ${process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT}`);
  try {
    created = ensureConfig(configPath).created;
    stack = await startStack({
      dataDir,
      configPath,
      port: knobs.PORT,
      sandboxPort: knobs.SANDBOX_PORT,
      tools: options.tools,
      handlers: knobs.TOOLRUNNER_HANDLERS,
      dynamoEndpoint: knobs.TOOLRUNNER_DYNAMODB_ENDPOINT,
      onProgress: (line) => console.log(`  ${line}`),
      // Template mode applies the app as it is now over the running stack on SIGHUP (`kill -HUP <pid>`).
      ...(knobs.TOOLRUNNER_HANDLERS === 'template' ? { onDeploy: (line: string) => console.log(line) } : {}),
    });
  } catch (error) {
    console.error(`${command} failed: ${(error as Error).message}`);
    owner.release();
    process.exit(1);
  }

  if (created) {
    // The only time keys reach the terminal: the file was just made, and whoever started it needs them once.
    console.log(`keys: ${configPath} (created with random keys; they are printed this once only)`);
    const { principals } = JSON.parse(readFileSync(configPath, 'utf8')) as { principals: { id: string; key: string; roles: string[] }[] };
    for (const p of principals) console.log(`  ${p.id} (${p.roles.join(', ')}): ${p.key}`);
    const agent = principals.find((p) => p.roles.includes('agent'));
    const firstTool = [...stack.deps.tools.keys()][0];
    if (agent) {
      console.log('try:');
      console.log(
        `  RUN=$(curl -s -X POST ${stack.apiUrl}/v1/runs -H 'Authorization: Bearer ${agent.key}' | sed -E 's/.*"runId":"([^"]+)".*/\\1/')`,
      );
      if (stack.sandboxUrl) {
        console.log(
          `  curl -s -X POST ${stack.apiUrl}/v1/runs/$RUN/tool-calls -H 'Authorization: Bearer ${agent.key}' -H 'Content-Type: application/json' -d '{"callId":"call_1","turn":1,"name":"get_order","arguments":{"orderId":"ord_1"}}'`,
        );
      } else if (firstTool) {
        console.log(
          `  curl -s ${stack.apiUrl}/v1/tools -H 'Authorization: Bearer ${agent.key}'    # then POST /v1/runs/$RUN/tool-calls with "name":"${firstTool}"`,
        );
      }
    }
  } else {
    console.log(`keys: ${configPath} (not printed; read them from that file)`);
  }
  if (stack.recovered.length) console.log(`recovered ${stack.recovered.length} operation(s) interrupted by the last shutdown`);
  for (const line of startSummary({ apiUrl: stack.apiUrl, sandboxUrl: stack.sandboxUrl, dataDir, configPath, createdKeys: created }))
    console.log(line);
  console.log(`handlers: ${stack.handlers}`);
  if (stack.aws) console.log(`aws: ${stack.aws.line}`);
  console.log(`ready: api=${stack.apiUrl}${stack.sandboxUrl ? ` sandbox=${stack.sandboxUrl}` : ''}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    try {
      const counts = stack.deps.metrics?.snapshot?.() ?? [];
      if (counts.length) console.log(`metrics this session: ${counts.map(formatSample).join('  ')}`);
      await stack.stop();
      await otlp?.shutdown().catch(() => undefined);
      owner.release();
      process.exit(0);
    } catch (error) {
      console.error(`shutdown failed: ${(error as Error).message}`);
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}
