#!/usr/bin/env node
import '../local/env-defaults';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createClient, ToolRunnerError } from '../functions/client';
import { loadTools } from './load-tools';
import { startNotesApi } from './notes-api';
import { formatTimeline } from './timeline';

const USAGE = `usage:
  toolrunner start [--tools PATH]   the embedded stack (knobs: PORT, SANDBOX_PORT, TOOLRUNNER_DATA_DIR,
                                    TOOLRUNNER_CONFIG; TOOLRUNNER_TOOLS=PATH is the same as --tools)
  toolrunner trace RUN_ID           a run's trace as a timeline (TOOLRUNNER_URL, TOOLRUNNER_KEY)
  toolrunner notes-api              the quick start's example upstream: a notes API on NOTES_PORT (default 4000)
`;

/** Messages only: a failure prints one line and an exit code, never a stack trace. */
function fail(message: string, code = 1): never {
  console.error(`toolrunner: ${message}`);
  process.exit(code);
}

async function start(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tools: { type: 'string' } }, strict: true });
  const toolsPath = values.tools ?? (process.env.TOOLRUNNER_TOOLS || undefined);
  let tools: Awaited<ReturnType<typeof loadTools>> | undefined;
  if (toolsPath) {
    try {
      tools = await loadTools(toolsPath);
    } catch (error) {
      fail(`--tools: ${(error as Error).message}`, 2);
    }
    console.log(`tools: ${tools.map((t) => t.name).join(', ')} (from ${toolsPath}; no sandbox)`);
  }
  // Loaded only to start: the stack's modules take seconds to load, which a refusal or `trace` never needs.
  const { runEmbeddedStack } = await import('../local/run-stack');
  await runEmbeddedStack('toolrunner start', { tools });
}

const TraceEnv = z.object({
  TOOLRUNNER_URL: z.string().url().default('http://127.0.0.1:3000'),
  TOOLRUNNER_KEY: z.string({ error: 'TOOLRUNNER_KEY is required (a bearer key that may read the run)' }).min(1),
});

async function trace(args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true });
  if (positionals.length !== 1) fail(`trace needs one RUN_ID\n${USAGE}`, 2);
  const env = TraceEnv.safeParse(process.env);
  if (!env.success) fail(env.error.issues.map((i) => i.message).join('; '), 2);
  const client = createClient({ baseUrl: env.data.TOOLRUNNER_URL, apiKey: env.data.TOOLRUNNER_KEY });
  try {
    process.stdout.write(formatTimeline(await client.getTrace(positionals[0])));
  } catch (error) {
    if (error instanceof ToolRunnerError) fail(`${error.code}: ${error.message}`);
    throw error;
  }
}

const NotesEnv = z.object({ NOTES_PORT: z.coerce.number().int().min(0).max(65535).default(4000) });

async function notesApi(args: string[]): Promise<void> {
  parseArgs({ args, strict: true });
  const env = NotesEnv.safeParse(process.env);
  if (!env.success) fail('NOTES_PORT must be a port number', 2);
  const api = await startNotesApi(env.data.NOTES_PORT).catch((error: Error) => fail(`notes-api: ${error.message}`));
  console.log(`notes api: ${api.url} (GET and PUT /notes/{id}; writes deduplicated on Idempotency-Key)`);
  const stop = () => api.server.close(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return start(rest);
    case 'trace':
      return trace(rest);
    case 'notes-api':
      return notesApi(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      fail(`unknown command ${command}\n${USAGE}`, 2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => fail((error as Error)?.message ?? String(error)));
