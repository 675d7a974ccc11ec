import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

/** Lints one probe module placed in `dir` (removed afterwards) and returns Biome's exit code and output. */
function lintProbe(dir: string, source: string): { status: number | null; output: string } {
  const file = join(root, dir, `layering-probe-${process.pid}.ts`);
  writeFileSync(file, source);
  try {
    const run = spawnSync(join(root, 'node_modules/.bin/biome'), ['lint', file], { cwd: root, encoding: 'utf8' });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(file, { force: true });
  }
}

// The layering rule lives in biome.json (npm run lint): each case is an import one layer may not make.
describe('the layering rule (npm run lint)', () => {
  it.each([
    ['functions/core', "import { makeApp } from '../api/app';", 'functions/core is the pure core'],
    ['functions/core', "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';", 'functions/core is the pure core'],
    ['functions/steps', "import { submitToolCall } from '../commands/submit';", 'steps/ and adapters/ import only functions/core'],
    ['functions/adapters', "import { advance } from '../steps/advance';", 'steps/ and adapters/ import only functions/core'],
    ['functions/commands', "import { makeApp } from '../api/app';", 'commands/ import only functions/core and functions/steps'],
    ['functions/mcp', "import { makeApp } from '../api/app';", 'share authentication and HTML through functions/http'],
    ['functions/console', "import { mcpRoutes } from '../mcp/server';", 'share authentication and HTML through functions/http'],
    ['functions/http', "import { makeApp } from '../api/app';", 'functions/http and functions/html are shared by the surfaces'],
    ['functions/api', "import { target } from '../../test/support/target';", 'nothing under functions/ or bench/ imports test/'],
    ['bench', "import { target } from '../test/support/target';", 'nothing under functions/ or bench/ imports test/'],
  ])('refuses in %s: %s', (dir, importLine, message) => {
    const { status, output } = lintProbe(dir, `${importLine}\nexport const probe = 1;\n`);
    expect(output).toContain(message);
    expect(status).not.toBe(0);
  });

  it.each([
    ['functions/core', "import { hashValue } from './canonical';"],
    ['functions/steps', "import { accepts } from '../core/transition-table';"],
    ['functions/commands', "import { advance } from '../steps/advance';"],
    ['functions/console', "import { authenticateBearer } from '../http/authenticate';"],
  ])('allows in %s: %s', (dir, importLine) => {
    const { status, output } = lintProbe(dir, `${importLine}\nexport const probe = 1;\n`);
    expect(output).not.toContain('noRestrictedImports');
    expect(status).toBe(0);
  });
});
