import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startStack } from '../../local/stack';
import { isEmbedded } from '../support/target';

const parent = mkdtempSync(join(tmpdir(), 'toolrunner-datadir-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe.runIf(isEmbedded)('the data directory', () => {
  it('is created readable by its owner only (0700), with the blob store inside', async () => {
    const dataDir = join(parent, 'nested', 'data');
    const stack = await startStack({
      dataDir,
      configPath: join(parent, 'config.json'),
      dynamoEndpoint: inject('dynamoEndpoint'),
      tablePrefix: `d${Date.now().toString(36)}`,
      port: 0,
      sandboxPort: 0,
    });
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(dataDir, 'blobs')).mode & 0o777).toBe(0o700);
    } finally {
      await stack.stop();
    }
  }, 120_000);
});
