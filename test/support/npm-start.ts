import { type NpmStarted, npmStart as startNpm } from '../../scripts/npm-start';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handlerMode } from './target';

export type { NpmStarted };

/** `npm start` (scripts/npm-start.ts) running the handlers the test target names, unless `env` says otherwise. */
export function npmStart(env: Record<string, string>, options?: Parameters<typeof startNpm>[1]): Promise<NpmStarted> {
  return startNpm({ ...(handlerMode ? { TOOLRUNNER_HANDLERS: handlerMode } : {}), ...env }, options);
}

/**
 * A data directory for `npm start` with a config of two principals: an agent with every tool, and a reviewer
 * (who sees idempotency keys and resolves reviews). Removed with `remove`.
 */
export function agentAndReviewerDataDir(name: string) {
  const dataDir = mkdtempSync(join(tmpdir(), `toolrunner-${name}-`));
  const configPath = join(dataDir, 'config.json');
  const agentKey = `tr_${name}_agent_key_0123456789abcdef`;
  const reviewerKey = `tr_${name}_reviewer_key_0123456789abcdef`;
  writeFileSync(
    configPath,
    JSON.stringify({
      principals: [
        { id: 'agent', key: agentKey, roles: ['agent'], tools: '*' },
        { id: 'reviewer', key: reviewerKey, roles: ['reviewer'], tools: [] },
      ],
      approvalSecret: `${name}-test-secret-0123456789abcdef`,
    }),
  );
  return { dataDir, configPath, agentKey, reviewerKey, remove: () => rmSync(dataDir, { recursive: true, force: true }) };
}
