/**
 * `npm run soak`: 5,000 tool calls (SOAK_CALLS) through the embedded stack's HTTP API, 16 at a time
 * (SOAK_CONCURRENCY), with misbehaving tools in the mix: a cyclic output, a BigInt, a tool that ignores its
 * abort signal for 10 s, and 100 KB results that go through the blob store. Prints the process's RSS and
 * heap after a forced GC every 500 calls and exits 1 when RSS grows by more than SOAK_MAX_GROWTH_MB (40)
 * from the end of the warm-up (the first fifth) to the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ToolSpec } from '../functions/core/tool-spec';
import { startStack } from '../local/stack';

const CALLS = Number(process.env.SOAK_CALLS ?? 5_000);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
const MAX_GROWTH_MB = Number(process.env.SOAK_MAX_GROWTH_MB ?? 40);
const SAMPLE_EVERY = 500;

const tool = (name: string, execute: ToolSpec['execute'], over: Partial<ToolSpec> = {}): ToolSpec => ({
  name,
  description: name,
  inputSchema: z.object({ i: z.number().int() }),
  outputSchema: z.any(),
  risk: 'read',
  timeoutMs: 2_000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  execute,
  ...over,
});
const tools: ToolSpec[] = [
  tool('echo', async (_ctx, input: { i: number }) => ({ i: input.i, text: 'ok' })),
  tool('cyclic', async () => {
    const o: Record<string, unknown> = { id: 'x' };
    o.self = o;
    return o;
  }),
  tool('bigint', async () => ({ n: 2n ** 70n })),
  // Ignores its signal and answers after 10 s: the runner settles it at 300 ms; its timer lives on.
  tool('deaf', () => new Promise((resolve) => setTimeout(() => resolve({ late: true }), 10_000)), { timeoutMs: 300 }),
  tool('large', async (_ctx, input: { i: number }) => ({ i: input.i, text: 'x'.repeat(100_000) })),
];
const MIX = ['echo', 'echo', 'echo', 'echo', 'echo', 'cyclic', 'bigint', 'deaf', 'large', 'echo'];

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
function sample(calls: number) {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { calls, rssMb: mb(m.rss), heapUsedMb: mb(m.heapUsed), externalMb: mb(m.external) };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'toolrunner-soak-'));
  const stack = await startStack({ dataDir, configPath: join(dataDir, 'config.json'), port: 0, tools, sweepIntervalMs: 5_000 });
  const { principals } = (await stack.deps.config()) as { principals: { key: string; roles: string[] }[] };
  const key = principals.find((p) => p.roles.includes('agent'))!.key;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=25' };
  const runs: string[] = [];
  for (let i = 0; i < CONCURRENCY; i++) {
    const res = await fetch(`${stack.apiUrl}/v1/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ budgets: { maxToolCalls: 100_000, maxTurns: 10_000 } }),
    });
    if (res.status !== 201) throw new Error(`POST /v1/runs answered ${res.status}: ${await res.text()}`);
    runs.push(((await res.json()) as { runId: string }).runId);
  }

  const samples = [sample(0)];
  const statuses: Record<string, number> = {};
  const started = Date.now();
  let next = 0;
  let done = 0;
  const worker = async (w: number) => {
    let turn = 0;
    while (next < CALLS) {
      const i = next++;
      const name = MIX[i % MIX.length];
      const res = await fetch(`${stack.apiUrl}/v1/runs/${runs[w]}/tool-calls`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ callId: `call_${i}`, turn: ++turn, name, arguments: { i } }),
      });
      const body = (await res.json()) as { status?: string; code?: string; state?: string };
      const label = `${name}:${res.status}:${body.status ?? body.state}${body.code ? `/${body.code}` : ''}`;
      statuses[label] = (statuses[label] ?? 0) + 1;
      if (++done % SAMPLE_EVERY === 0) {
        samples.push(sample(done));
        console.log(JSON.stringify(samples.at(-1)));
      }
    }
  };
  await Promise.all(runs.map((_, w) => worker(w)));
  const seconds = (Date.now() - started) / 1000;
  // The deaf tool's late answers come after its 10 s timers: measure once they have all fired.
  await new Promise((r) => setTimeout(r, 11_000));
  const settled = sample(done);
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });

  const warm = samples[Math.max(1, Math.floor(samples.length / 5))];
  const growth = settled.rssMb - warm.rssMb;
  const peak = Math.max(...samples.map((s) => s.rssMb));
  console.log(
    `soak: ${done} calls in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)} calls/s), ${CONCURRENCY} concurrent; ` +
      `RSS ${samples[0].rssMb} MB at start, ${warm.rssMb} MB after warm-up (${warm.calls} calls), peak ${peak} MB, ` +
      `${settled.rssMb} MB at the end (heap ${settled.heapUsedMb} MB): growth after warm-up ${growth} MB (limit ${MAX_GROWTH_MB})`,
  );
  console.log(`outcomes: ${JSON.stringify(statuses)}`);
  if (growth > MAX_GROWTH_MB) {
    console.error(`soak: RSS grew by ${growth} MB after warm-up`);
    process.exit(1);
  }
}

main().catch((error: Error) => {
  console.error(`soak failed: ${error.message}`);
  process.exit(1);
});
