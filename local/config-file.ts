import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { RunnerConfig } from '../functions/core/config';

/**
 * The local config file. Its own module so that both the embedded stack and the stack from the template
 * create it without one importing the other.
 */

/** Creates the config file with random keys for one principal of each role, if it does not exist. */
export function ensureConfig(path: string): { created: boolean } {
  if (existsSync(path)) return { created: false };
  mkdirSync(dirname(resolve(path)), { recursive: true });
  const key = () => `tr_${randomBytes(24).toString('base64url')}`;
  const config: RunnerConfig = {
    principals: [
      { id: 'agent', key: key(), roles: ['agent'], tools: '*' },
      { id: 'approver', key: key(), roles: ['approver'], tools: [] },
      { id: 'reviewer', key: key(), roles: ['reviewer'], tools: [] },
      { id: 'admin', key: key(), roles: ['admin'], tools: '*' },
    ],
    approvalSecret: randomBytes(32).toString('base64url'),
    approvalTtlSeconds: 86400,
  };
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { created: true };
}
