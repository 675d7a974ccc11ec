import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** The fields of toolrunner's own package.json that init takes versions from. */
export interface OwnPackage {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** The files `toolrunner init` would overwrite: it writes nothing then, and exits 2 naming them. */
export class InitConflict extends Error {
  constructor(readonly files: string[]) {
    super(`init writes nothing over existing files: ${files.join(', ')} (move them away or run it in an empty folder)`);
  }
}

const TOOLS_TS = `import { defineTool } from 'toolrunner';
import { z } from 'zod';

// One tool; add yours beside it. Each call is validated, authorized, recorded and run exactly once.
export default [
  defineTool({
    name: 'greet',
    description: 'Greets someone by name.',
    inputSchema: z.strictObject({ name: z.string().min(1).max(100) }),
    outputSchema: z.object({ text: z.string() }),
    risk: 'read',
    timeoutMs: 3_000,
    maxAttempts: 3,
    supportsIdempotency: true,
    approval: 'never',
    // GREETING comes from the environment: app.ts sets it for the deployed (and template mode's) Lambdas.
    execute: async (_ctx, input) => ({ text: \`\${process.env.GREETING ?? 'Hello'}, \${input.name}!\` }),
  }),
];
`;

const AGENT_MJS = `import { readFileSync } from 'node:fs';
import { createClient } from 'toolrunner/client';

// The agent key: TOOLRUNNER_KEY, else the agent principal of the keys file \`toolrunner start\` created.
const keys = () => JSON.parse(readFileSync(process.env.TOOLRUNNER_CONFIG ?? 'toolrunner.local.json', 'utf8'));
const apiKey = process.env.TOOLRUNNER_KEY ?? keys().principals.find((p) => p.roles.includes('agent')).key;
const runner = createClient({ baseUrl: process.env.TOOLRUNNER_URL ?? 'http://127.0.0.1:3000', apiKey });

const { runId } = await runner.createRun({ budgets: { maxToolCalls: 20 } });
console.log(\`run \${runId}\`);
const call = { callId: 'call_1', turn: 1, name: 'greet', arguments: { name: process.argv[2] ?? 'world' } };
const answer = await runner.callTool(runId, call, { waitSeconds: 10 });
const envelope = answer.kind === 'envelope' ? answer.envelope : await runner.waitForOperation(answer.operationId);
console.log(JSON.stringify(envelope, null, 2));
`;

const APP_TS = `import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import { ToolRunner } from 'toolrunner/cdk';

const app = new App();
const stack = new Stack(app, 'MyAgent');
const runner = new ToolRunner(stack, 'Runner', {
  // tools.ts is bundled into the Lambdas that run the tools, which also get this environment.
  tools: { entry: 'tools.ts', environment: { GREETING: 'Hello' } },
});
new CfnOutput(stack, 'ApiUrl', { value: runner.apiUrl });
`;

const CDK_JSON = `${JSON.stringify({ app: 'node --import tsx app.ts' }, null, 2)}\n`;

/** What to ignore: the local keys and data (every project), the synthesized assembly (CDK projects). */
function ignored(cdk: boolean): string[] {
  return ['node_modules/', 'toolrunner.local.json', '.local/', ...(cdk ? ['cdk.out/', 'cdk.out.*'] : [])];
}

/**
 * `toolrunner init [--cdk]` in `dir`: `tools.ts` (one tool), `agent.mjs`, `.gitignore` entries for the local
 * keys and data; with `cdk`, `app.ts` (a stack with the ToolRunner construct), `cdk.json` and the CDK
 * dependencies. `package.json` and `.gitignore` are created or added to; any other file that exists is
 * a conflict, and then nothing is written. Returns the files written and the ones added to.
 */
export function init(dir: string, options: { cdk: boolean; own: OwnPackage }): { written: string[]; updated: string[]; next: string[] } {
  const files: Record<string, string> = {
    'tools.ts': TOOLS_TS,
    'agent.mjs': AGENT_MJS,
    ...(options.cdk ? { 'app.ts': APP_TS, 'cdk.json': CDK_JSON } : {}),
  };
  const conflicts = Object.keys(files).filter((f) => existsSync(join(dir, f)));
  if (conflicts.length) throw new InitConflict(conflicts);

  const packagePath = join(dir, 'package.json');
  const hadPackage = existsSync(packagePath);
  const pkg = (
    hadPackage ? JSON.parse(readFileSync(packagePath, 'utf8')) : { name: npmName(basename(dir)), version: '0.1.0', private: true }
  ) as {
    type?: string;
    scripts?: Record<string, string>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const own = options.own;
  const range = (name: string) => own.devDependencies?.[name] ?? own.dependencies?.[name] ?? own.peerDependencies?.[name] ?? 'latest';
  const has = (name: string) => Boolean(pkg.dependencies?.[name] ?? pkg.devDependencies?.[name]);
  const add = (field: 'dependencies' | 'devDependencies', names: string[], version = range) => {
    for (const name of names) if (!has(name)) pkg[field] = { ...pkg[field], [name]: version(name) };
  };
  // The scaffold is ES modules; `npm init -y` now writes "commonjs", which a folder without code of its own drops.
  const ownCode = readdirSync(dir).some((f) => /\.(c?js|ts)$/.test(f));
  if (!pkg.type || (pkg.type === 'commonjs' && !ownCode)) pkg.type = 'module';
  add('dependencies', ['toolrunner'], () => `^${own.version}`);
  add('dependencies', ['zod']);
  if (options.cdk) {
    add('dependencies', ['aws-cdk-lib', 'constructs']);
    // esbuild bundles the Lambdas without Docker; tsx runs app.ts; aws-cdk is the CLI (`npx cdk deploy`);
    // iam-simulate (AGPL-3.0, a development tool here) checks every AWS call in template mode.
    add('devDependencies', ['aws-cdk', 'esbuild', 'tsx', '@cloud-copilot/iam-simulate']);
  }
  const scripts: Record<string, string> = options.cdk
    ? { start: 'toolrunner start --template', synth: 'cdk synth', deploy: 'cdk deploy', agent: 'node agent.mjs' }
    : { start: 'toolrunner start --tools tools.ts', agent: 'node agent.mjs' };
  // A script the project has already stays as it is.
  pkg.scripts = { ...scripts, ...pkg.scripts };

  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text, { flag: 'wx' });
  writeFileSync(packagePath, `${JSON.stringify(pkg, null, 2)}\n`);
  const gitignore = join(dir, '.gitignore');
  const had = existsSync(gitignore) ? readFileSync(gitignore, 'utf8') : '';
  const missing = ignored(options.cdk).filter((line) => !had.split('\n').some((l) => l.trim() === line));
  if (missing.length) writeFileSync(gitignore, `${had}${had && !had.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`);

  const written = [...Object.keys(files), ...(hadPackage ? [] : ['package.json']), ...(had ? [] : ['.gitignore'])];
  const updated = [...(hadPackage ? ['package.json'] : []), ...(had && missing.length ? ['.gitignore'] : [])];
  const next = options.cdk
    ? [
        'npm install',
        "npx toolrunner node-runtime 24      # the Lambda runtime's Node.js, which template mode runs the functions on",
        'npx toolrunner start --template     # synthesizes app.ts and runs the stack as it will deploy; prints the keys',
        'node agent.mjs                      # in another terminal: a run, one call to greet',
        'npx cdk deploy                      # the same stack in your AWS account',
      ]
    : [
        'npm install',
        'npx toolrunner start --tools tools.ts   # prints the keys and "ready: api=..."',
        'node agent.mjs                         # in another terminal',
      ];
  return { written, updated, next };
}

/** A folder's name as an npm package name. */
function npmName(folder: string): string {
  return (
    folder
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'my-agent'
  );
}
