import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** Whether importing the handlers' tracer sets up the X-Ray SDK's automatic mode (its process-wide promise hook). */
async function automaticModeAfterImport(env: Record<string, string>): Promise<boolean> {
  const script = `
    await import('./functions/handlers/observability.ts');
    const { createRequire } = await import('node:module');
    const cls = createRequire(import.meta.url)('cls-hooked/context');
    console.log(JSON.stringify(Boolean(cls.getNamespace('AWSXRay'))));`;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...clean, ...env },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('the X-Ray SDK mode', () => {
  it('off Lambda, where nothing is traced, installs no promise hook', async () => {
    expect(await automaticModeAfterImport({})).toBe(false);
  }, 60_000);

  it('on Lambda stays automatic, so subsegments find their segment', async () => {
    expect(await automaticModeAfterImport({ AWS_LAMBDA_FUNCTION_NAME: 'toolrunner-Api' })).toBe(true);
  }, 60_000);
});
