import { readdirSync, readFileSync } from 'node:fs';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { inCi, javaPresent, skipNotice } from './test/support/prerequisites';
import { isEmbedded } from './test/support/target';

const root = import.meta.dirname;

/** The package's own names, as examples and the adapter cases import them (tsconfig.json `paths` says the same to tsc and tsx). */
const packageNames = [
  { find: /^toolrunner$/, replacement: `${root}/functions/index.ts` },
  { find: /^toolrunner\/client$/, replacement: `${root}/functions/client/index.ts` },
  { find: /^toolrunner\/testing$/, replacement: `${root}/functions/testing/index.ts` },
  { find: /^toolrunner\/ai-sdk$/, replacement: `${root}/functions/agents/ai-sdk.ts` },
  { find: /^toolrunner\/openai-agents$/, replacement: `${root}/functions/agents/openai-agents.ts` },
];

/**
 * The frameworks' versions under test: the dev dependencies `ai` and `@openai/agents` are the oldest supported
 * (package.json pins them); `ai-newest` and `openai-agents-newest` are the newest, aliased in their place for
 * the adapter tests of the `newest-sdks` project. Those need Node 22 (`npm run test:newest-sdks`).
 */
const newestSdks = [
  { find: /^ai$/, replacement: 'ai-newest' },
  { find: /^ai\/(.*)$/, replacement: 'ai-newest/$1' },
  { find: /^@openai\/agents$/, replacement: 'openai-agents-newest' },
];
const versionOf = (pkg: string) =>
  (JSON.parse(readFileSync(`${root}/node_modules/${pkg}/package.json`, 'utf8')) as { version: string }).version;
const nodeMajor = Number(process.versions.node.split('.')[0]);
const oldestSdks = { TOOLRUNNER_SDK_VERSIONS: `ai@${versionOf('ai')} @openai/agents@${versionOf('@openai/agents')}` };

/** The integration tier runs on DynamoDB Local, but for these files (the Step Functions engine in-process, files, OTLP). */
const INTEGRATION_WITHOUT_DYNAMODB = [
  'config-source.test.ts',
  'engine.test.ts',
  'mcp-answers.test.ts',
  'otlp-export.test.ts',
  'sandbox-state.test.ts',
  'signing-key-seed.test.ts',
];

/**
 * The test files that need DynamoDB Local (so Java): the end-to-end suite, the integration tier but for the
 * files above, and the installed package's `toolrunner start`. Every other test file is `unit`: the pure core,
 * CDK templates and bundles, the CLI's refusals, and those integration files.
 */
const NEEDS_DYNAMODB = [
  'test/e2e/**/*.test.ts',
  // Runs only under `npm run test:package` (TOOLRUNNER_PACKAGE_TEST=1).
  'test/package/installed-package.test.ts',
  // Runs only under `npm run test:chaos` (TOOLRUNNER_CHAOS=1); npm start brings its own DynamoDB Local.
  'test/chaos/**/*.test.ts',
  ...readdirSync(`${root}/test/integration`)
    .filter((file) => file.endsWith('.test.ts') && !INTEGRATION_WITHOUT_DYNAMODB.includes(file))
    .map((file) => `test/integration/${file}`),
];

/**
 * Files that start `npm start` or the bundled stack again and again (over a minute of the two workers' time):
 * `npm run test:slow` runs them (`.ci/run` does), so `npm test` stays within five minutes on two cores.
 */
const SLOW = [
  'test/e2e/data-dir.test.ts',
  'test/e2e/deployed-bundles.test.ts',
  'test/e2e/rate-limits-processes.test.ts',
  // Each over 20 s of a worker's time: generated hostile inputs, a sweep of thousands, the MCP conformance suite.
  'test/e2e/fuzz.test.ts',
  'test/integration/sweeper-drain.test.ts',
  'test/e2e/mcp-conformance.test.ts',
];
/** The same for the unit project: every function bundled with its metafile, the CLI and `verify` run as processes. */
const SLOW_UNIT = ['test/infra/user-code-bundles.test.ts', 'test/package/cli.test.ts', 'test/unit/verify.test.ts'];
const slowToo = process.env.TOOLRUNNER_SLOW === '1';

/** What a project whose files start stacks needs: the global setup that starts one DynamoDB Local for it. */
const onDynamoDb = {
  globalSetup: ['test/support/global-setup.ts'],
  // Its files start stacks that keep module-level clients and caches: each file gets its own source modules.
  poolOptions: { forks: { isolate: true } },
};

const unit: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'unit',
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...NEEDS_DYNAMODB, ...(slowToo ? [] : SLOW_UNIT)],
    env: oldestSdks,
  },
};

const dynamodb: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'dynamodb',
    include: NEEDS_DYNAMODB,
    exclude: [...configDefaults.exclude, ...(slowToo ? [] : SLOW)],
    env: oldestSdks,
    ...onDynamoDb,
  },
};

// The newest frameworks declare Node 22: on an older Node this project is not defined at all.
const newest = (): TestProjectInlineConfiguration => ({
  extends: true,
  resolve: { alias: newestSdks },
  test: {
    name: 'newest-sdks',
    include: ['test/e2e/adapter-*.test.ts', 'test/e2e/examples.test.ts'],
    env: {
      TOOLRUNNER_SDKS: 'newest',
      TOOLRUNNER_SDK_VERSIONS: `ai@${versionOf('ai-newest')} @openai/agents@${versionOf('openai-agents-newest')}`,
    },
    ...onDynamoDb,
  },
});

// A deployed target (TARGET=localstack|aws) needs no local Java; an embedded one does, and CI requires it.
const runsDynamoDb = !isEmbedded || inCi || javaPresent();
// Vitest loads this file more than once per run; the notice is said once.
const noticed = globalThis as { javaNoticeShown?: boolean };
if (!runsDynamoDb && !noticed.javaNoticeShown) {
  noticed.javaNoticeShown = true;
  console.warn(skipNotice('java', 'the tests that need DynamoDB Local', 'install a JRE 17+ (.ci/run installs one)'));
}

export default defineConfig({
  resolve: { alias: packageNames },
  test: {
    projects: [unit, ...(runsDynamoDb ? [dynamodb, ...(nodeMajor >= 22 ? [newest()] : [])] : [])],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Workers are reused across files, so CDK, the AWS SDKs and the rest of node_modules load once per worker
    // rather than once per file (this halves the unit project's time). Files leave the process as they found
    // it (what one sets in process.env, it removes); unit files also share the repo's own modules.
    poolOptions: { forks: { isolate: false } },
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ['default'],
  },
});
