import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

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

export default defineConfig({
  resolve: { alias: packageNames },
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['test/**/*.test.ts'],
          env: { TOOLRUNNER_SDK_VERSIONS: `ai@${versionOf('ai')} @openai/agents@${versionOf('@openai/agents')}` },
        },
      },
      // The newest frameworks declare Node 22: on an older Node this project is not defined at all.
      ...(nodeMajor >= 22
        ? [
            {
              extends: true as const,
              resolve: { alias: newestSdks },
              test: {
                name: 'newest-sdks',
                include: ['test/e2e/adapter-*.test.ts', 'test/e2e/examples.test.ts'],
                env: {
                  TOOLRUNNER_SDKS: 'newest',
                  TOOLRUNNER_SDK_VERSIONS: `ai@${versionOf('ai-newest')} @openai/agents@${versionOf('openai-agents-newest')}`,
                },
              },
            },
          ]
        : []),
    ],
  },
});
