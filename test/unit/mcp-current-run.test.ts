import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../functions/client';
import { currentRun, type CurrentRunContext } from '../../functions/mcp/modern';
import { memoryStore } from '../support/memory-store';

/**
 * The principal's current MCP run under any interleaving of the requests that look for it (some starting a
 * new one, as `toolrunner_start_run` does): the record moves by a conditional write, a new run is created with
 * an Idempotency-Key naming the run it replaces. Seeded and replayable (fast-check's scheduler).
 */
const SEED = 20261204;

describe("a principal's current MCP run", () => {
  it('racing requests never fork it: one successor per run, every answer a run that was current, the record the newest', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.boolean(), { minLength: 2, maxLength: 6 }),
        fc.boolean(),
        async (s, fresh, staleFirst) => {
          const store = memoryStore();
          const runs = new Map<string, { runId: string; predecessor: string; status: 'open' | 'completed' }>();
          const byKey = new Map<string, string>();
          const history: (string | undefined)[] = [undefined];
          const run = (runId: string) =>
            ({ runId, status: runs.get(runId)!.status, updatedAt: new Date().toISOString() }) as unknown as Run;
          // The API's Idempotency-Key: the same key is the same run, whoever asks and whenever.
          const createRun = s.scheduleFunction(async (_body: unknown, opts?: { idempotencyKey?: string }) => {
            const key = opts!.idempotencyKey!;
            let runId = byKey.get(key);
            if (!runId) {
              runId = `run_${byKey.size + 1}`;
              byKey.set(key, runId);
              runs.set(runId, { runId, predecessor: key, status: 'open' });
            }
            return run(runId);
          });
          const getRun = s.scheduleFunction(async (runId: string) => run(runId));
          const replace = s.scheduleFunction(store.replaceCurrentMcpRun);
          const context: CurrentRunContext = {
            principalId: 'p',
            idleMinutes: 60,
            now: Date.now,
            client: { createRun, getRun } as unknown as CurrentRunContext['client'],
            runs: {
              currentMcpRun: s.scheduleFunction(store.currentMcpRun),
              async replaceCurrentMcpRun(principalId, expected, runId) {
                const moved = await replace(principalId, expected, runId);
                if (moved) history.push(runId);
                return moved;
              },
            },
          };
          if (staleFirst) {
            // A current run that has ended: every request replaces it, and they must agree on the successor.
            runs.set('run_old', { runId: 'run_old', predecessor: '', status: 'completed' });
            await store.replaceCurrentMcpRun('p', undefined, 'run_old');
            history.push('run_old');
          }
          const answers = Promise.all(fresh.map((f) => currentRun(context, f).then((run) => run.runId)));
          await s.waitFor(answers);
          const got = await answers;

          // Every answer was the recorded current run at some moment.
          for (const runId of got) expect(history).toContain(runId);
          // No run has two successors: the record moves along one chain.
          const successors = new Map<string | undefined, string>();
          for (let i = 1; i < history.length; i++) {
            expect(successors.has(history[i - 1])).toBe(false);
            successors.set(history[i - 1], history[i]!);
          }
          // The record names the newest run of that chain; without a fresh request, everybody got the same run.
          expect(await store.currentMcpRun('p')).toBe(history.at(-1));
          if (!fresh.includes(true)) expect(new Set(got).size).toBe(1);
          // Each created run replaced the run its key names, which was current when it was created.
          for (const created of runs.values())
            if (created.predecessor)
              expect(created.predecessor).toBe(`mcp-current-run-after:${history[history.indexOf(created.runId) - 1] ?? 'none'}`);
        },
      ),
      { seed: SEED, numRuns: 400 },
    );
  });
});
