import { readFileSync } from 'node:fs';
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { inCi, javaPresent, skipNotice } from './test/support/prerequisites';
import { isEmbedded } from './test/support/target';

const root = import.meta.dirname;

/** The package's own names, as examples and the adapter cases import them (tsconfig.json `paths` says the same to tsc and tsx). */
const packageNames = [
  { find: /^toolrunner$/, replacement: `${root}/functions/index.ts` },
  { find: /^toolrunner\/client$/, replacement: `${root}/functions/client/index.ts` },
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
const oldestSdkVersions = `ai@${versionOf('ai')} @openai/agents@${versionOf('@openai/agents')}`;

/**
 * The test files that need DynamoDB Local (so Java): the end-to-end suite, the store contract and what
 * runs on the real store, and the installed package's `toolrunner start`. Everything else is `unit`:
 * the pure core, CDK templates and bundles, the CLI's refusals, the Step Functions engine in-process.
 */
const NEEDS_DYNAMODB = [
  'test/e2e/**/*.test.ts',
  'test/integration/store.test.ts',
  'test/integration/store-properties.test.ts',
  'test/integration/pending-approvals.test.ts',
  'test/integration/otel-spans.test.ts',
  'test/package/installed-package.test.ts',
];

const unit: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'unit',
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...NEEDS_DYNAMODB],
    env: { TOOLRUNNER_SDK_VERSIONS: oldestSdkVersions },
  },
};

/** One DynamoDB Local for the whole run, started by this project's global setup only. */
const dynamodb: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'dynamodb',
    include: NEEDS_DYNAMODB,
    globalSetup: ['test/support/global-setup.ts'],
    // Its files start stacks that keep module-level clients and caches: each file gets its own source modules.
    poolOptions: { forks: { isolate: true } },
    env: { TOOLRUNNER_SDK_VERSIONS: oldestSdkVersions },
  },
};

/** The adapter tests again against the newest frameworks; they declare Node 22, so on an older Node this project is not defined. */
const newestSdkProject: TestProjectInlineConfiguration = {
  extends: true,
  resolve: { alias: newestSdks },
  test: {
    name: 'newest-sdks',
    include: ['test/e2e/adapter-*.test.ts', 'test/e2e/examples.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    poolOptions: { forks: { isolate: true } },
    env: {
      TOOLRUNNER_SDKS: 'newest',
      TOOLRUNNER_SDK_VERSIONS: `ai@${versionOf('ai-newest')} @openai/agents@${versionOf('openai-agents-newest')}`,
    },
  },
};

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
    projects: [...(runsDynamoDb ? [unit, dynamodb] : [unit]), ...(runsDynamoDb && nodeMajor >= 22 ? [newestSdkProject] : [])],
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
