#!/usr/bin/env node
import '../local/env-defaults';
import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { z } from 'zod';
import { createClient, ToolRunnerError } from '../functions/client';
import { withHashedKeys } from '../functions/core/config';
import type { OwnPackage } from './init';
import { loadTools } from './load-tools';
import { startNotesApi } from './notes-api';
import { formatTimeline } from './timeline';

/** How the commands for people find their key (cli/people.ts). */
const PEOPLE_KEYS = `  --as PRINCIPAL   act with that principal's key from the keys file (TOOLRUNNER_CONFIG, default toolrunner.local.json)
  otherwise TOOLRUNNER_KEY, else the keys file's first principal with the role the command needs
  TOOLRUNNER_URL   the API (default http://127.0.0.1:3000)
  Exit codes: 0 done, 1 refused or failed (the API's code and message), 2 a usage error or no key.
`;

const COMMANDS = {
  start: `usage: toolrunner start [--tools PATH | --template]
  Runs the embedded stack: DynamoDB Local, the state machine, the API and (without --tools) the sandbox.
  --tools PATH   a module (.ts, .mjs, .js) whose default export is an array of tool specs; they replace the
                 demo tools and no sandbox starts (TOOLRUNNER_TOOLS=PATH does the same)
  --template     template mode: the stack built from the CDK app that cdk.json in this folder names, synthesized
                 when a file it read changed; its tools are those its ToolRunner construct bundles
                 (TOOLRUNNER_HANDLERS=template does the same)
  knobs: PORT, SANDBOX_PORT, TOOLRUNNER_DATA_DIR, TOOLRUNNER_CONFIG, TOOLRUNNER_HANDLERS
`,
  init: `usage: toolrunner init [--cdk]
  Scaffolds a project in this folder: tools.ts (one tool), agent.mjs, .gitignore entries for the local keys and
  data, package.json scripts and dependencies. --cdk adds app.ts (a stack with the ToolRunner construct),
  cdk.json and the CDK dependencies, for \`toolrunner start --template\` and \`cdk deploy\`.
  Writes nothing, and exits 2, when a file it would write exists.
`,
  'node-runtime': `usage: toolrunner node-runtime MAJOR
  Installs Node.js MAJOR (the Lambda runtime's major, e.g. 24) in node_modules/.cache/nodeMAJOR, where template
  mode runs the functions on it, and prints its path.
`,
  trace: `usage: toolrunner trace RUN_ID
  Prints a run's trace as a timeline.
  TOOLRUNNER_URL   the API (default http://127.0.0.1:3000)
  TOOLRUNNER_KEY   a bearer key that may read the run (required)
`,
  keys: `usage: toolrunner keys hash [PATH]
       toolrunner keys show PRINCIPAL
  hash  prints the config document at PATH (or on standard input) with every principal's key replaced by its
        keySha256, for a deployed secret that authenticates without holding any key
  show  prints PRINCIPAL's key from the keys file (TOOLRUNNER_CONFIG, default toolrunner.local.json); exits 1
        when the file holds only its keySha256, 2 when it has no such principal
`,
  approvals: `usage: toolrunner approvals [--as PRINCIPAL] [--json]
  Lists the approvals waiting for you, oldest first: the tool, who asks, the tool's own lines, every argument
  (the tool's secretFields and card-like numbers masked, long strings folded with their size) and their hash.
${PEOPLE_KEYS}`,
  approve: `usage: toolrunner approve OPERATION_ID [--reason TEXT] [--as PRINCIPAL]
  Approves an operation waiting for a person, as the console and the signed links do (once; never your own).
${PEOPLE_KEYS}`,
  reject: `usage: toolrunner reject OPERATION_ID [--reason TEXT] [--as PRINCIPAL]
  Rejects an operation waiting for a person, as the console and the signed links do (once; never your own).
${PEOPLE_KEYS}`,
  runs: `usage: toolrunner runs [--status open|cancelled|budget_exhausted|expired] [--limit N] [--cursor C] [--as PRINCIPAL]
  Lists runs, newest first: every run for a reviewer or admin, an agent's own.
${PEOPLE_KEYS}`,
  policy: `usage: toolrunner policy schema [--json] [--config PATH] [--tools PATH]
       toolrunner policy test --cases FILE [--config PATH] [--tools PATH]
  schema  prints the Cedar schema policies are validated against (from the tools and the config's principals)
  test    evaluates each case of FILE (a JSON list of { principal, tool, input, run?, now?, expect }) against the
          config's policies; exits 1 when any decision is not the expected one (examples/policies/ has one)
  --config PATH  the config document with the principals and policies (default TOOLRUNNER_CONFIG); its
                 principals need no keys here
  --tools PATH   the tools module (default: the demo tools)
`,
  verify: `usage: toolrunner verify --tools PATH [--cases FILE] [--junit FILE] [--allow-effects]
  Runs each tool's sample inputs through the runner's engine against its upstream, without a fault and under
  each fault (response lost, connection reset, 503, 429, an answer slower than timeoutMs, a second delivery),
  and checks the promises it declares. Prints the hosts first, then a table of held / broken / unverifiable.
  --cases FILE      { "<tool>": [{ name?, input }] } (at most 1 MiB); else each tool's verify.cases
  --junit FILE      also writes the results as JUnit XML
  --allow-effects   lets it call hosts that are not loopback (it makes real effects there, repeatedly)
  Exit codes: 0 nothing broken, 1 a broken promise, 2 an unknown tool, an input failing its schema, or a refused host.
`,
  'notes-api': `usage: toolrunner notes-api
  Serves the quick start's example upstream: a notes API on NOTES_PORT (default 4000).
`,
} as const;
type Command = keyof typeof COMMANDS;

const USAGE = `usage: toolrunner <command> [options]
  toolrunner start [--tools PATH]   the embedded stack (knobs: PORT, SANDBOX_PORT, TOOLRUNNER_DATA_DIR,
                                    TOOLRUNNER_CONFIG; TOOLRUNNER_TOOLS=PATH is the same as --tools)
  toolrunner start --template       the stack built from your CDK app (cdk.json here), as it will deploy
  toolrunner init [--cdk]           scaffolds tools.ts, agent.mjs (and with --cdk app.ts, cdk.json) here
  toolrunner node-runtime MAJOR     installs the Lambda runtime's Node.js for template mode
  toolrunner trace RUN_ID           a run's trace as a timeline (TOOLRUNNER_URL, TOOLRUNNER_KEY)
  toolrunner keys hash [PATH]       a config document with keys replaced by their SHA-256 (for the deployed secret)
  toolrunner keys show PRINCIPAL    a principal's key from toolrunner.local.json (TOOLRUNNER_CONFIG)
  toolrunner approvals              the approvals waiting for you, with their arguments (TOOLRUNNER_URL)
  toolrunner approve|reject OPERATION_ID [--reason TEXT]
                                    decides an approval as an approver (key: --as, TOOLRUNNER_KEY or the keys file)
  toolrunner runs [--status S]      runs, newest first
  toolrunner policy schema|test     the policies' schema; test cases against the policies (--config PATH)
  toolrunner verify --tools PATH    checks each tool's promises against its upstream under faults
  toolrunner notes-api              the quick start's example upstream: a notes API on NOTES_PORT (default 4000)
  toolrunner --version              the installed version
  toolrunner <command> --help       one command's usage
Exit codes: 0 done, 1 failed, 2 a usage error.
`;

/** Messages only: a failure prints one line and an exit code, never a stack trace. */
function fail(message: string, code = 1): never {
  console.error(`toolrunner: ${message}`);
  process.exit(code);
}

/** A usage error: exit 2 with the command's usage. */
function usageError(message: string, command?: Command): never {
  fail(`${message}\n${command ? COMMANDS[command] : USAGE}`, 2);
}

/** The package's version, from the package.json beside the sources (cli/) or the build (dist/). */
function ownPackage(): OwnPackage {
  return JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as OwnPackage;
}

function version(): string {
  return ownPackage().version;
}

/** parseArgs for one command: an unknown flag or a missing value is a usage error naming that command. */
function argsOf<T extends ParseArgsConfig & { strict?: true }>(command: Command, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ ...config, strict: true });
  } catch (error) {
    usageError((error as Error).message, command);
  }
}

async function start(args: string[]): Promise<void> {
  const { values } = argsOf('start', { args, options: { tools: { type: 'string' }, template: { type: 'boolean' } } });
  if (values.template) process.env.TOOLRUNNER_HANDLERS = 'template';
  const toolsPath = values.tools ?? (process.env.TOOLRUNNER_TOOLS || undefined);
  if (toolsPath && process.env.TOOLRUNNER_HANDLERS === 'template')
    usageError(
      "template mode runs the tools your CDK app's ToolRunner construct bundles (its tools.entry), not --tools or TOOLRUNNER_TOOLS: drop one",
      'start',
    );
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
  const { positionals } = argsOf('trace', { args, allowPositionals: true });
  if (positionals.length !== 1) usageError('trace needs one RUN_ID', 'trace');
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

async function keys(args: string[]): Promise<void> {
  const { positionals } = argsOf('keys', { args, allowPositionals: true });
  if (positionals[0] === 'show') {
    if (positionals.length !== 2) usageError('keys show needs one PRINCIPAL', 'keys');
    return people((p, io) => p.showKey(io, positionals[1]));
  }
  if (positionals[0] !== 'hash' || positionals.length > 2) usageError('keys needs the subcommand hash or show', 'keys');
  const path = positionals[1];
  let text: string;
  try {
    text = path ? readFileSync(path, 'utf8') : readFileSync(0, 'utf8');
  } catch (error) {
    fail(`keys hash: cannot read ${path ?? 'standard input'}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    fail(`keys hash: ${path ?? 'standard input'} is not JSON`);
  }
  try {
    process.stdout.write(`${JSON.stringify(withHashedKeys(document), null, 2)}\n`);
  } catch (error) {
    fail(`keys hash: ${(error as Error).message}`);
  }
}

/** Runs a command of cli/people.ts; its refusals print one line with their exit code. */
async function people(run: (module: typeof import('./people'), io: import('./people').PeopleIo) => Promise<void> | void): Promise<void> {
  const module = await import('./people');
  try {
    await run(module, { out: (text) => process.stdout.write(text), env: process.env });
  } catch (error) {
    if (error instanceof module.CliFailure) fail(error.message, error.code);
    throw error;
  }
}

const AS_OPTION = { as: { type: 'string' } } as const;

async function approvals(args: string[]): Promise<void> {
  const { values } = argsOf('approvals', { args, options: { ...AS_OPTION, json: { type: 'boolean' } } });
  return people((p, io) => p.listApprovals(io, { as: values.as, json: values.json === true }));
}

async function decision(command: 'approve' | 'reject', args: string[]): Promise<void> {
  const { values, positionals } = argsOf(command, { args, allowPositionals: true, options: { ...AS_OPTION, reason: { type: 'string' } } });
  if (positionals.length !== 1) usageError(`${command} needs one OPERATION_ID`, command);
  return people((p, io) => p.decide(io, command, positionals[0], { as: values.as, reason: values.reason }));
}

async function runs(args: string[]): Promise<void> {
  const { values } = argsOf('runs', {
    args,
    options: { ...AS_OPTION, status: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
  });
  return people((p, io) => p.listRuns(io, values));
}

async function policy(args: string[]): Promise<void> {
  const { values, positionals } = argsOf('policy', {
    args,
    allowPositionals: true,
    options: { tools: { type: 'string' }, cases: { type: 'string' }, config: { type: 'string' }, json: { type: 'boolean' } },
  });
  const sub = positionals[0];
  if (positionals.length !== 1 || (sub !== 'schema' && sub !== 'test')) usageError('policy needs the subcommand schema or test', 'policy');
  if (sub === 'test' && !values.cases) usageError('policy test needs --cases FILE', 'policy');
  let tools: Awaited<ReturnType<typeof loadTools>> | undefined;
  if (values.tools) tools = await loadTools(values.tools).catch((error: Error) => fail(`--tools: ${error.message}`, 2));
  const { printSchema, testPolicies } = await import('./policy');
  const io = {
    out: (text: string) => process.stdout.write(text),
    configPath: values.config ?? (process.env.TOOLRUNNER_CONFIG || undefined),
    tools,
  };
  try {
    if (sub === 'schema') printSchema(io, values.json === true);
    else if (!testPolicies(io, values.cases!)) process.exitCode = 1;
  } catch (error) {
    fail(`policy ${sub}: ${(error as Error).message}`);
  }
}

async function initCommand(args: string[]): Promise<void> {
  const { values } = argsOf('init', { args, options: { cdk: { type: 'boolean' } } });
  const { init, InitConflict } = await import('./init');
  try {
    const { written, updated, next } = init(process.cwd(), { cdk: values.cdk === true, own: ownPackage() });
    console.log(`init: wrote ${written.join(', ')}${updated.length ? `; added to ${updated.join(', ')}` : ''}`);
    console.log('next:');
    for (const line of next) console.log(`  ${line}`);
  } catch (error) {
    if (error instanceof InitConflict) fail(`init: ${error.message}`, 2);
    throw error;
  }
}

async function nodeRuntime(args: string[]): Promise<void> {
  const { positionals } = argsOf('node-runtime', { args, allowPositionals: true });
  const major = Number(positionals[0]);
  if (positionals.length !== 1 || !Number.isInteger(major) || major < 18)
    usageError('node-runtime needs one Node.js major, e.g. 24', 'node-runtime');
  const { installNodeRuntime } = await import('./node-runtime');
  try {
    console.log(installNodeRuntime(major));
  } catch (error) {
    fail(`node-runtime: ${(error as Error).message}`);
  }
}

async function verify(args: string[]): Promise<void> {
  const { values } = argsOf('verify', {
    args,
    options: { tools: { type: 'string' }, cases: { type: 'string' }, junit: { type: 'string' }, 'allow-effects': { type: 'boolean' } },
  });
  if (!values.tools) usageError('verify needs --tools PATH', 'verify');
  const tools = await loadTools(values.tools).catch((error: Error) => fail(`--tools: ${error.message}`, 2));
  const { runVerify } = await import('./verify');
  const io = { out: (text: string) => process.stdout.write(text), err: (text: string) => process.stderr.write(text) };
  const code = await runVerify(
    tools,
    { casesPath: values.cases, junitPath: values.junit, allowEffects: values['allow-effects'] === true },
    io,
  );
  // A tools module may hold servers or sockets open (an example's own upstream): the verdict is final.
  process.exit(code);
}

const NotesEnv = z.object({ NOTES_PORT: z.coerce.number().int().min(0).max(65535).default(4000) });

async function notesApi(args: string[]): Promise<void> {
  argsOf('notes-api', { args });
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
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(version());
    return;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  if (!Object.hasOwn(COMMANDS, command)) usageError(`unknown command ${command}`);
  const known = command as Command;
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(COMMANDS[known]);
    return;
  }
  switch (known) {
    case 'start':
      return start(rest);
    case 'trace':
      return trace(rest);
    case 'notes-api':
      return notesApi(rest);
    case 'keys':
      return keys(rest);
    case 'policy':
      return policy(rest);
    case 'init':
      return initCommand(rest);
    case 'node-runtime':
      return nodeRuntime(rest);
    case 'verify':
      return verify(rest);
    case 'approvals':
      return approvals(rest);
    case 'approve':
    case 'reject':
      return decision(known, rest);
    case 'runs':
      return runs(rest);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => fail((error as Error)?.message ?? String(error)));
