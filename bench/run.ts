import '../local/env-defaults';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { freePort, localClient, startDynamoLocal } from '../local/dynamodb-local';
import { type NpmStarted, npmStart } from '../scripts/npm-start';
import { runMain } from './bench-stack';
import { processCpuSeconds } from './process-cpu';

/**
 * `npm run bench`: the runner as users run it, `npm start` in its own process, called over HTTP from this
 * one, side by side in one run with the peer a user would pick instead (Powertools `makeIdempotent` around
 * the same HTTP read, here, on the same DynamoDB Local): medians and their ratio, calls per second with 16
 * concurrent runs, the server's RSS over a soak, and the time from `npm start` to `ready:`. Figures are
 * reported, never asserted in tests. `BENCH_CPU_PROFILE=<dir>` has `npm start` write a V8 CPU profile there.
 *
 * Both sides first make `BENCH_WARMUP` untimed calls (alternating, as sampled): a long-running server's JIT is
 * not warm after a handful, and the runner's longer code path (more modules, more sequential DynamoDB
 * requests) would pay more for cold code than the peer, skewing the ratio. During the throughput phase
 * the bench reads the CPU time DynamoDB Local's java, the server's node and this client each spend, per
 * call: whichever nears a core's worth is what bounds calls per second.
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 100);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? 16);
// 1,600 calls: long enough (about 20 s) that a busy neighbour's burst moves the rate little.
const CALLS_PER_RUN = Number(process.env.BENCH_CALLS_PER_RUN ?? 100);
const SOAK_CALLS = Number(process.env.BENCH_SOAK_CALLS ?? 10_000);
// Model calls: each run reserves and settles this many in sequence, the 16 runs at once.
const PAIRS_PER_RUN = Number(process.env.BENCH_MODEL_PAIRS_PER_RUN ?? 50);
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (n: number) => Math.round(n * 10) / 10;

async function timeToReady(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-start-'));
  const started = Date.now();
  const npm = await npmStart(knobs(dir, await freePort(), await freePort()));
  const ms = Date.now() - started;
  await npm.signalGroup('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

function knobs(dir: string, port: number, sandboxPort: number): Record<string, string> {
  return {
    PORT: String(port),
    SANDBOX_PORT: String(sandboxPort),
    TOOLRUNNER_DATA_DIR: dir,
    TOOLRUNNER_CONFIG: join(dir, 'config.json'),
    TOOLRUNNER_HANDLERS: 'source',
  };
}

/** The pid of the node process `npm start` runs: npm's child, or the child itself when run directly. */
function serverPid(npm: NpmStarted): number {
  const pid = String(npm.child.pid);
  const isServer = (p: string) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('local/main.ts');
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  return Number(isServer(pid) ? pid : (children.find(isServer) ?? children[0]));
}

/** A process's resident set size, in MiB. */
function rssMiB(pid: number): number {
  const kb = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1]);
  return Math.round(kb / 1024);
}

/** CPU seconds used so far by DynamoDB Local, the server and this process (the client). */
function cpuSeconds(dynamoPid: number, nodePid: number) {
  const own = process.cpuUsage();
  return { dynamodbLocal: processCpuSeconds(dynamoPid), server: processCpuSeconds(nodePid), client: (own.user + own.system) / 1e6 };
}

/**
 * Fifty policies of the shapes docs/policies.md shows (spend caps on input fields, hours, roles, attributes, log-only
 * candidates), all of which a `get_order` call passes, to measure what deciding by policies costs per call.
 */
export function fiftyPolicies(): string {
  const lines = [
    '@id("calls") permit(principal, action in Action::"call", resource) when { principal.roles.contains("agent") };',
    '@id("reads-unattended") permit(principal, action == Action::"get_order:unattended", resource);',
  ];
  for (let i = 0; i < 48; i++) {
    const id = `rule-${i}`;
    switch (i % 6) {
      case 0:
        lines.push(
          `@id("${id}") forbid(principal, action == Action::"charge_card", resource) when { context.input.amount > ${200_000 + i} };`,
        );
        break;
      case 1:
        lines.push(
          `@id("${id}") forbid(principal, action == Action::"get_order", resource) when { context.input.orderId == "ord_blocked_${i}" };`,
        );
        break;
      case 2:
        lines.push(`@id("${id}") forbid(principal, action, resource) when { context.run.toolCalls > ${1_000_000 + i} };`);
        break;
      case 3:
        lines.push(
          `@id("${id}") permit(principal, action == Action::"charge_card:unattended", resource) when { context.input.amount <= ${20_000 + i} && context.now.hour >= 0 };`,
        );
        break;
      case 4:
        lines.push(
          `@id("${id}") forbid(principal, action == Action::"send_email", resource) when { context.input.to like "*@blocked-${i}.test" };`,
        );
        break;
      default:
        lines.push(
          `@id("${id}") @mode("log_only") forbid(principal, action == Action::"get_order", resource) when { context.input.orderId == "ord_shadow_${i}" };`,
        );
    }
  }
  return lines.join('\n');
}

/** A second `npm start`, on the same DynamoDB Local, whose config holds the same principal and fifty policies. */
async function policiesServer(dynamoEndpoint: string, key: string): Promise<{ apiUrl: string; pid: number; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-policies-'));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      principals: [{ id: 'agent', key, roles: ['agent'], tools: '*' }],
      approvalSecret: 'bench-secret-0123456789abcdef',
      policies: fiftyPolicies(),
    }),
    { mode: 0o600 },
  );
  const env = { ...knobs(dir, await freePort(), await freePort()), TOOLRUNNER_DYNAMODB_ENDPOINT: dynamoEndpoint };
  const npm = await npmStart(env, {
    command: PROFILE_DIR
      ? ['node', '--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, 'with-policies')}`, '--import', 'tsx', 'local/main.ts']
      : undefined,
  });
  const apiUrl = npm.output().match(/ready: api=(\S+)/)?.[1];
  if (!apiUrl) throw new Error(`npm start printed no api URL:\n${npm.output()}`);
  return {
    apiUrl,
    pid: serverPid(npm),
    stop: async () => {
      await npm.signalGroup('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const readyMs = await timeToReady();
  const dynamo = await startDynamoLocal();
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-'));
  const key = 'tr_bench_agent_key_0123456789abcdef';
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      principals: [{ id: 'agent', key, roles: ['agent'], tools: '*' }],
      approvalSecret: 'bench-secret-0123456789abcdef',
      modelPrices: { 'bench/model': { inputPerMillionCents: 100, outputPerMillionCents: 400 } },
    }),
    { mode: 0o600 },
  );
  const env = { ...knobs(dir, await freePort(), await freePort()), TOOLRUNNER_DYNAMODB_ENDPOINT: dynamo.endpoint };
  let npm: NpmStarted;
  try {
    // Profiling: the node command `npm start` execs, run directly (NODE_OPTIONS refuses --cpu-prof).
    npm = await npmStart(env, {
      command: PROFILE_DIR ? ['node', '--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, '--import', 'tsx', 'local/main.ts'] : undefined,
    });
  } catch (error) {
    // Nothing else holds this DynamoDB Local: stop it before failing.
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const ready = npm.output().match(/ready: api=(\S+) sandbox=(\S+)/);
  if (!ready) throw new Error(`npm start printed no api and sandbox URL:\n${npm.output()}`);
  const [, apiUrl, sandboxUrl] = ready;
  const nodePid = serverPid(npm);
  let policyCost: Record<string, unknown> = {};

  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=25' };
  const postTo = async (base: string, path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return (await res.json()) as any;
  };
  const createRun = async (base = apiUrl) =>
    (await postTo(base, '/v1/runs', { budgets: { maxToolCalls: 100_000, maxTurns: 10_000 } })).runId as string;
  let n = 0;
  const getOrder = async (runId: string, base = apiUrl) => {
    const i = n++;
    const env = await postTo(base, `/v1/runs/${runId}/tool-calls`, {
      callId: `call_b${i}`,
      turn: 1,
      name: 'get_order',
      arguments: { orderId: `ord_${1 + (i % 100)}` },
    });
    if (env.status !== 'succeeded') throw new Error(`unexpected envelope ${JSON.stringify(env)}`);
  };

  // The peer: the same HTTP read behind Powertools idempotency, in this process, on the same DynamoDB Local.
  const peerDynamo = localClient(dynamo.endpoint);
  await peerDynamo.send(
    new CreateTableCommand({
      TableName: 'bench-idempotency',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }),
  );
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: 'bench-idempotency', awsSdkV3Client: peerDynamo });
  const peerConfig = new IdempotencyConfig({ eventKeyJmesPath: 'callId' });
  // As in a Lambda: the in-progress marker expires with the invocation's remaining time.
  peerConfig.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as Context);
  const peer = makeIdempotent(
    async (event: { callId: string; orderId: string }) => (await fetch(`${sandboxUrl}/v1/orders/${event.orderId}`)).json(),
    { persistenceStore, config: peerConfig },
  );

  try {
    const runId = await createRun();
    for (let i = 0; i < WARMUP; i++) {
      await getOrder(runId);
      await peer({ callId: `peer_warmup_${i}`, orderId: `ord_${1 + (i % 100)}` });
    }
    const viaRunner: number[] = [];
    const viaPeer: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      let t = performance.now();
      await getOrder(runId);
      viaRunner.push(performance.now() - t);
      t = performance.now();
      await peer({ callId: `peer_${i}`, orderId: `ord_${1 + (i % 100)}` });
      viaPeer.push(performance.now() - t);
    }

    // Throughput: RUNS runs at once, each calling in sequence, as concurrent agents would.
    const runs = await Promise.all(Array.from({ length: RUNS }, () => createRun()));
    const cpuBefore = cpuSeconds(dynamo.pid, nodePid);
    const t0 = performance.now();
    await Promise.all(
      runs.map(async (r) => {
        for (let i = 0; i < CALLS_PER_RUN; i++) await getOrder(r);
      }),
    );
    const callsPerSecond = (RUNS * CALLS_PER_RUN) / ((performance.now() - t0) / 1000);
    const cpuAfter = cpuSeconds(dynamo.pid, nodePid);
    const cpuMsPerCall = (key: keyof typeof cpuAfter) => round1(((cpuAfter[key] - cpuBefore[key]) * 1000) / (RUNS * CALLS_PER_RUN));

    // Model calls: a reservation before each call and its settlement after, RUNS runs at once; the server's CPU per pair.
    const modelRuns = await Promise.all(Array.from({ length: RUNS }, () => createRun()));
    const reserveAndSettle = async (runId: string, i: number) => {
      const reserved = await postTo(apiUrl, `/v1/runs/${runId}/model-calls`, {
        requestId: `req_${i}`,
        model: 'bench/model',
        inputTokens: 2000,
        maxOutputTokens: 1000,
      });
      if (!reserved.modelCallId) throw new Error(`unexpected reservation ${JSON.stringify(reserved)}`);
      const settled = await postTo(apiUrl, `/v1/runs/${runId}/model-calls/${reserved.modelCallId}/usage`, {
        inputTokens: 2000,
        outputTokens: 300,
      });
      if (settled.status !== 'settled') throw new Error(`unexpected settlement ${JSON.stringify(settled)}`);
    };
    for (let i = 0; i < 20; i++) await reserveAndSettle(modelRuns[0], -1 - i);
    const modelCpuBefore = cpuSeconds(dynamo.pid, nodePid);
    const tModel = performance.now();
    await Promise.all(
      modelRuns.map(async (r) => {
        for (let i = 0; i < PAIRS_PER_RUN; i++) await reserveAndSettle(r, i);
      }),
    );
    const pairs = RUNS * PAIRS_PER_RUN;
    const modelCpuAfter = cpuSeconds(dynamo.pid, nodePid);
    const modelCalls = {
      pairsPerSecondWith16Runs: Math.round(pairs / ((performance.now() - tModel) / 1000)),
      cpuMsPerReserveAndSettleWith16Runs: {
        dynamodbLocal: round1(((modelCpuAfter.dynamodbLocal - modelCpuBefore.dynamodbLocal) * 1000) / pairs),
        server: round1(((modelCpuAfter.server - modelCpuBefore.server) * 1000) / pairs),
        client: round1(((modelCpuAfter.client - modelCpuBefore.client) * 1000) / pairs),
      },
      pairs,
    };

    // Memory of the server over many calls, sampled after each quarter: flat means later quarters add nothing.
    const rssBefore = rssMiB(nodePid);
    const soakRuns = await Promise.all(Array.from({ length: RUNS }, () => createRun()));
    const rssByQuarter: number[] = [];
    for (let quarter = 0; quarter < 4; quarter++) {
      let left = Math.ceil(SOAK_CALLS / 4);
      await Promise.all(
        soakRuns.map(async (r) => {
          while (left-- > 0) await getOrder(r);
        }),
      );
      rssByQuarter.push(rssMiB(nodePid));
    }

    // What deciding by 50 Cedar policies costs: a second server, the same but for its config's policies, on the
    // same DynamoDB Local; throughput phases alternate between the two (twice each), so a busy neighbour's burst
    // lands on both sides alike (three rounds). The server's CPU per call is the cost; the difference is the policies'.
    const withPolicies = await policiesServer(dynamo.endpoint, key);
    try {
      const phase = async (base: string, pid: number) => {
        const phaseRuns = await Promise.all(Array.from({ length: RUNS }, () => createRun(base)));
        for (let i = 0; i < 20; i++) await getOrder(phaseRuns[0], base);
        const before = processCpuSeconds(pid);
        const calls = Math.ceil(CALLS_PER_RUN / 2);
        await Promise.all(
          phaseRuns.map(async (r) => {
            for (let i = 0; i < calls; i++) await getOrder(r, base);
          }),
        );
        return ((processCpuSeconds(pid) - before) * 1000) / (RUNS * calls);
      };
      // The second server is fresh: it gets the same untimed warm-up the first had, so no phase pays for cold code.
      const warmRun = await createRun(withPolicies.apiUrl);
      for (let i = 0; i < WARMUP; i++) await getOrder(warmRun, withPolicies.apiUrl);
      const without: number[] = [];
      const withFifty: number[] = [];
      for (let round = 0; round < 3; round++) {
        without.push(await phase(apiUrl, nodePid));
        withFifty.push(await phase(withPolicies.apiUrl, withPolicies.pid));
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      policyCost = {
        serverCpuMsPerCallWithoutPolicies: round1(mean(without)),
        serverCpuMsPerCallWith50Policies: round1(mean(withFifty)),
        costPerCallMs: round1(mean(withFifty) - mean(without)),
        phases: { without: without.map(round1), with50Policies: withFifty.map(round1) },
      };
    } finally {
      await withPolicies.stop();
    }

    const figures = {
      measured: 'npm start (source handlers) in its own process; this process the client and the peer',
      warmupCalls: WARMUP,
      samples: SAMPLES,
      npmStartToReadyMs: readyMs,
      runnerGetOrderMedianMs: round1(median(viaRunner)),
      peerPowertoolsMedianMs: round1(median(viaPeer)),
      runnerToPeerRatio: round1(median(viaRunner) / median(viaPeer)),
      callsPerSecondWith16Runs: Math.round(callsPerSecond),
      concurrentRuns: RUNS,
      cpuMsPerCallWith16Runs: {
        dynamodbLocal: cpuMsPerCall('dynamodbLocal'),
        server: cpuMsPerCall('server'),
        client: cpuMsPerCall('client'),
      },
      machineCores: availableParallelism(),
      serverRssMiB: { beforeSoak: rssBefore, afterEachQuarter: rssByQuarter, soakCalls: SOAK_CALLS },
      policies: policyCost,
      modelCalls,
    };
    console.log(JSON.stringify(figures, null, 2));
  } finally {
    await npm.signalGroup('SIGTERM');
    peerDynamo.destroy();
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
    if (PROFILE_DIR) console.log(`CPU profile of npm start in ${PROFILE_DIR}`);
  }
}

runMain(main);
