import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { inCi, javaPresent, skipNotice } from './test/support/prerequisites';
import { isEmbedded } from './test/support/target';

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
  test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...NEEDS_DYNAMODB] },
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
  test: {
    projects: runsDynamoDb ? [unit, dynamodb] : [unit],
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
