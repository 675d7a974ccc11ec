import '../local/env-defaults';
import { runMain, startBenchStack } from './bench-stack';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { freePort, localClient } from '../local/dynamodb-local';
import { npmStart } from '../test/support/npm-start';

/**
 * `npm run bench`: figures measured in one run on this machine, side by side with the peer a user would
 * pick instead (Powertools `makeIdempotent` around the same HTTP tool call on the same DynamoDB Local),
 * reported as medians and ratios, never asserted as absolute times in tests.
 */
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? 16);
const CALLS_PER_RUN = Number(process.env.BENCH_CALLS_PER_RUN ?? 40);
const SOAK_CALLS = Number(process.env.BENCH_SOAK_CALLS ?? 10_000);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (n: number) => Math.round(n * 10) / 10;
const mib = () => Math.round(process.memoryUsage().rss / 1048576);

async function timeToReady(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-start-'));
  const started = Date.now();
  const npm = await npmStart({
    PORT: String(await freePort()),
    SANDBOX_PORT: String(await freePort()),
    TOOLRUNNER_DATA_DIR: dir,
    TOOLRUNNER_CONFIG: join(dir, 'config.json'),
  });
  const ms = Date.now() - started;
  await npm.signalGroup('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

/**
 * A trace block's put carries only this condition: a guard against two writers picking one sequence number
 * (trace-clock.ts), never a decision that can lose a race to another step. Counted apart from conditional writes.
 */
const TRACE_BLOCK_GUARD = 'attribute_not_exists(seq)';
const decides = (condition?: string) => Boolean(condition) && condition !== TRACE_BLOCK_GUARD;

/** Counts DynamoDB writes by command, which of them are conditional (decide something), and the trace blocks. */
function countWrites(client: DynamoDBClient) {
  const counts = { calls: 0, conditional: 0, traceBlocks: 0, byCommand: {} as Record<string, number> };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      if (/^(Put|Update|Delete)Item|TransactWriteItems|BatchWriteItem/.test(name)) {
        const input = args.input as { ConditionExpression?: string; TransactItems?: Record<string, { ConditionExpression?: string }>[] };
        counts.calls++;
        const conditional =
          decides(input.ConditionExpression) ||
          (input.TransactItems ?? []).some((item) => Object.values(item).some((op) => decides(op?.ConditionExpression)));
        if (conditional) counts.conditional++;
        else if (input.ConditionExpression === TRACE_BLOCK_GUARD) counts.traceBlocks++;
        counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1;
      }
      return next(args);
    },
    { step: 'initialize', name: 'countWrites' },
  );
  const snapshot = () => ({ ...counts, byCommand: { ...counts.byCommand } });
  const since = (before: ReturnType<typeof snapshot>) => ({
    writes: counts.calls - before.calls,
    conditional: counts.conditional - before.conditional,
    traceBlocks: counts.traceBlocks - before.traceBlocks,
    byCommand: Object.fromEntries(
      Object.entries(counts.byCommand)
        .map(([k, v]) => [k, v - (before.byCommand[k] ?? 0)])
        .filter(([, v]) => (v as number) > 0),
    ),
  });
  return { snapshot, since };
}

async function main(): Promise<void> {
  const readyMs = await timeToReady();
  let writes!: ReturnType<typeof countWrites>;
  const key = 'tr_bench_agent_key_0123456789abcdef';
  const bench = await startBenchStack({
    name: 'bench',
    principals: [{ id: 'agent', key, roles: ['agent'], tools: '*' }],
    instrument: (client) => (writes = countWrites(client)),
  });
  const { stack } = bench;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=25' };
  const post = async (path: string, body: unknown) =>
    (await fetch(`${stack.apiUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })).json() as Promise<any>;
  const createRun = async () => (await post('/v1/runs', { budgets: { maxToolCalls: 100_000, maxTurns: 10_000 } })).runId as string;
  let n = 0;
  const getOrder = async (runId: string) => {
    const i = n++;
    const env = await post(`/v1/runs/${runId}/tool-calls`, {
      callId: `call_b${i}`,
      turn: 1,
      name: 'get_order',
      arguments: { orderId: `ord_${1 + (i % 100)}` },
    });
    if (env.status !== 'succeeded') throw new Error(`unexpected envelope ${JSON.stringify(env)}`);
  };

  // The peer: the same HTTP read behind Powertools idempotency, on the same DynamoDB Local.
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: 'bench-idempotency',
    awsSdkV3Client: localClient(bench.dynamoEndpoint),
  });
  const peerConfig = new IdempotencyConfig({ eventKeyJmesPath: 'callId' });
  // As in a Lambda: the in-progress marker expires with the invocation's remaining time.
  peerConfig.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as Context);
  const peer = makeIdempotent(
    async (event: { callId: string; orderId: string }) => (await fetch(`${stack.sandboxUrl}/v1/orders/${event.orderId}`)).json(),
    { persistenceStore, config: peerConfig },
  );

  try {
    const runId = await createRun();
    const viaRunner: number[] = [];
    const viaPeer: number[] = [];
    for (let i = 0; i < SAMPLES + 5; i++) {
      let t = performance.now();
      await getOrder(runId);
      if (i >= 5) viaRunner.push(performance.now() - t);
      t = performance.now();
      await peer({ callId: `peer_${i}`, orderId: `ord_${1 + (i % 100)}` });
      if (i >= 5) viaPeer.push(performance.now() - t);
    }

    // Writes on the critical path: until the answer, then until reported (off the critical path).
    const perCall = async (call: { name: string; arguments: unknown }) => {
      const before = writes.snapshot();
      const env = await post(`/v1/runs/${runId}/tool-calls`, { callId: `call_w${n++}`, turn: 1, ...call });
      if (env.status !== 'succeeded') throw new Error(`${call.name}: ${JSON.stringify(env)}`);
      const answered = writes.since(before);
      const opId = env.logical_operation_id as string;
      for (
        const deadline = Date.now() + 10_000;
        (await stack.deps.store.getOperation(opId))?.state !== 'reported' && Date.now() < deadline;
      )
        await new Promise((r) => setTimeout(r, 10));
      return { beforeAnswer: answered, inAll: writes.since(before) };
    };
    const getOrderWrites = await perCall({ name: 'get_order', arguments: { orderId: 'ord_7' } });
    const chargeWrites = await perCall({ name: 'charge_card', arguments: { amount: 1000, currency: 'USD', customer: 'cus_bench' } });

    // Throughput: RUNS runs at once, each calling in sequence, as concurrent agents would.
    const runs = await Promise.all(Array.from({ length: RUNS }, createRun));
    const t0 = performance.now();
    await Promise.all(
      runs.map(async (r) => {
        for (let i = 0; i < CALLS_PER_RUN; i++) await getOrder(r);
      }),
    );
    const callsPerSecond = (RUNS * CALLS_PER_RUN) / ((performance.now() - t0) / 1000);

    // Memory over many calls: the embedded engine and the handlers run in this process.
    // Sampled after each quarter: flat means the later quarters add nothing the first did not.
    const gc = () => (globalThis as { gc?: () => void }).gc?.();
    gc();
    const rssBefore = mib();
    const soakRuns = await Promise.all(Array.from({ length: RUNS }, createRun));
    const rssByQuarter: number[] = [];
    for (let quarter = 0; quarter < 4; quarter++) {
      let left = Math.ceil(SOAK_CALLS / 4);
      await Promise.all(
        soakRuns.map(async (r) => {
          while (left-- > 0) await getOrder(r);
        }),
      );
      gc();
      rssByQuarter.push(mib());
    }
    const rssAfter = rssByQuarter[3];

    const figures = {
      samples: SAMPLES,
      npmStartToReadyMs: readyMs,
      runnerGetOrderMedianMs: round1(median(viaRunner)),
      peerPowertoolsMedianMs: round1(median(viaPeer)),
      runnerToPeerRatio: round1(median(viaRunner) / median(viaPeer)),
      callsPerSecondWith16Runs: Math.round(callsPerSecond),
      concurrentRuns: RUNS,
      dynamoWritesPerHappyCall: { get_order: getOrderWrites, charge_card: chargeWrites },
      rssMiB: { beforeSoak: rssBefore, afterEachQuarter: rssByQuarter, afterSoak: rssAfter, soakCalls: SOAK_CALLS },
    };
    console.log(JSON.stringify(figures, null, 2));
  } finally {
    await bench.stop();
  }
}

runMain(main);
