import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { powertoolsLog } from '../../functions/adapters/powertools-log';
import { jsonLines } from '../../functions/core/log';
import type { Deps } from '../../functions/core/ports';
import { freeRateSlotsIfSettled } from '../../functions/steps/rate-slots';
import { operation } from '../support/records';

const root = join(import.meta.dirname, '../..');

function recording() {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: jsonLines((line) => lines.push(JSON.parse(line))) };
}

afterEach(() => vi.restoreAllMocks());

describe('one log port', () => {
  it('replaces every hand-built log line under functions/: no JSON built by hand, no console but the port’s fallback', () => {
    const files = readdirSync(join(root, 'functions'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => join(root, 'functions', f));
    const found = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      const hits = [...text.matchAll(/JSON\.stringify\(\{\s*level\b|console\.(?:error|warn|log|info|debug)\(/g)];
      return hits.map((m) => `${relative(root, file)}: ${m[0]}`);
    });
    // The port's own line builder and its fallback before the runtime installs the logger.
    expect(found).toEqual(['functions/core/log.ts: JSON.stringify({ level', 'functions/core/log.ts: console.error(']);
  });

  it('is what a step writes to through its deps: a rate-limit slot not freed', async () => {
    const { lines, log } = recording();
    const deps = {
      log,
      store: {
        giveBackRateSlot: async () => {
          throw new Error('throttled');
        },
      },
    } as unknown as Deps;
    const held = { holder: 'h_1', keys: ['k_1'] };
    await freeRateSlotsIfSettled(
      deps,
      operation({ state: 'executing', rateSlots: held }),
      operation({ state: 'recorded', rateSlots: held, envelope: { status: 'succeeded' } as never }),
    );
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'a rate-limit slot was not freed; it lapses at the operation deadline',
        operationId: 'op_1',
        error: 'throttled',
      },
    ]);
  });

  it('writes through the Powertools logger as the steps’ lines are: structured, at its own level', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    powertoolsLog().warn('a waiting slot was not freed', { operationId: 'op_1', error: 'boom' });
    const line = JSON.parse(written.join(''));
    expect(line).toMatchObject({
      level: 'WARN',
      message: 'a waiting slot was not freed',
      service: 'toolrunner',
      operationId: 'op_1',
      error: 'boom',
    });
  });
});
