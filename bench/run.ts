import '../local/env-defaults';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { freePort, localClient, startDynamoLocal } from '../local/dynamodb-local';
import { startStack } from '../local/stack';

/**
 * `npm run bench`: figures measured in one run on this machine, reported as medians and ratios
 * (never asserted as absolute times in tests).
 */
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timeToReady(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-start-'));
  const started = Date.now();
  const child = spawn('npm', ['start'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: String(await freePort()), SANDBOX_PORT: String(await freePort()), TOOLRUNNER_DATA_DIR: dir, TOOLRUNNER_CONFIG: join(dir, 'config.json') } });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  while (!out.includes('ready: api=')) {
    if (child.exitCode !== null) throw new Error(`npm start exited: ${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = Date.now() - started;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

async function main(): Promise<void> {
  const readyMs = await timeToReady();

  const writes = { calls: 0, items: 0, byCommand: {} as Record<string, number> };
  const dynamoLocal = await startDynamoLocal();
  const dynamo: DynamoDBClient = localClient(dynamoLocal.endpoint);
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      const input = args.input as { TransactItems?: unknown[] };
      if (/^(Put|Update|Delete)Item|TransactWriteItems|BatchWriteItem/.test(name)) {
        writes.calls++;
        writes.items += input.TransactItems?.length ?? 1;
        writes.byCommand[name] = (writes.byCommand[name] ?? 0) + 1;
      }
      return next(args);
    },
    { step: 'initialize', name: 'countWrites' },
  );
  const dir = mkdtempSync(join(tmpdir(), 'toolrunner-bench-'));
  const configPath = join(dir, 'config.json');
  const key = 'tr_bench_agent_key_0123456789abcdef';
  writeFileSync(configPath, JSON.stringify({ principals: [{ id: 'agent', key, roles: ['agent'], tools: '*' }], approvalSecret: 'bench-secret-0123456789abcdef' }));
  const stack = await startStack({ dataDir: dir, configPath, dynamoEndpoint: dynamoLocal.endpoint, dynamoClient: dynamo });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=25' };
  const post = async (path: string, body: unknown) => (await fetch(`${stack.apiUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })).json() as Promise<any>;
  try {
    const { runId } = await post('/v1/runs', {});
    const viaRunner: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < SAMPLES + 2; i++) {
      let t = performance.now();
      const env = await post(`/v1/runs/${runId}/tool-calls`, { callId: `call_b${i}`, turn: 1, name: 'get_order', arguments: { orderId: `ord_${i + 1}` } });
      if (env.status !== 'succeeded') throw new Error(`unexpected envelope ${JSON.stringify(env)}`);
      if (i >= 2) viaRunner.push(performance.now() - t);
      t = performance.now();
      await (await fetch(`${stack.sandboxUrl}/v1/orders/ord_${i + 1}`)).json();
      if (i >= 2) direct.push(performance.now() - t);
    }
    const before = { ...writes, byCommand: { ...writes.byCommand } };
    const charge = await post(`/v1/runs/${runId}/tool-calls`, { callId: 'call_charge', turn: 1, name: 'charge_card', arguments: { amount: 1000, currency: 'USD', customer: 'cus_bench' } });
    if (charge.status !== 'succeeded') throw new Error(`charge: ${JSON.stringify(charge)}`);
    const perCharge = {
      requests: writes.calls - before.calls,
      items: writes.items - before.items,
      byCommand: Object.fromEntries(Object.entries(writes.byCommand).map(([k, v]) => [k, v - (before.byCommand[k] ?? 0)]).filter(([, v]) => (v as number) > 0)),
    };
    const figures = {
      samples: SAMPLES,
      npmStartToReadyMs: readyMs,
      getOrderMedianMs: Math.round(median(viaRunner)),
      directSandboxMedianMs: Math.round(median(direct) * 10) / 10,
      runnerToDirectRatio: Math.round(median(viaRunner) / median(direct)),
      dynamoWritesPerHappyChargeCall: perCharge,
    };
    console.log(JSON.stringify(figures, null, 2));
  } finally {
    await stack.stop();
    await dynamoLocal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
