import '../local/env-defaults';
import { runMain, startBenchStack } from './bench-stack';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ExecutionSummary } from '../local/sfn-endpoint';
import { FUNCTIONS } from '../infra/functions';
import type { LifecycleFunction } from '../statemachines/definition';
import { sweep } from '../functions/steps/resume';
import { makeDocumentClient, makeDynamoStore } from '../functions/adapters/dynamo-store';
import { localClient } from '../local/dynamodb-local';

/**
 * `npm run cost`: AWS cost per million calls for each call path, from what one run on the embedded stack
 * counted (state transitions and Express executions from the engine, Lambda invocations and their
 * duration from the handlers, DynamoDB capacity units as DynamoDB Local reports them), priced at
 * published us-east-1 prices. Nothing here is estimated by hand; API Gateway and SNS are left out (the
 * same for any serverless peer) and named in the output. The sweeper reads each watch entry once, when it
 * comes due, after the call ended: its read units per entry are counted over one sweep of every entry the
 * run wrote, and each path is charged for the entries it wrote.
 */
const PRICES = {
  standardTransition: 25 / 1e6,
  expressRequest: 1 / 1e6,
  /** Express duration, billed in 64 MB steps (the runner's executions carry kilobytes of state). */
  expressGbSecond: 0.00001667,
  expressGb: 64 / 1024,
  lambdaRequest: 0.2 / 1e6,
  /** arm64. */
  lambdaGbSecond: 0.0000133334,
  /** DynamoDB on-demand, per write and read request unit. */
  write: 0.625 / 1e6,
  read: 0.125 / 1e6,
} as const;
/** What the construct gives a function that names no memory (infra/tool-runner.ts). */
const DEFAULT_MEMORY_MB = 256;
const CALLS = Number(process.env.COST_CALLS_PER_PATH ?? 5);

interface Tally {
  transitions: number;
  expressExecutions: number;
  expressGbSeconds: number;
  lambdaInvocations: number;
  lambdaGbSeconds: number;
  dynamoWriteUnits: number;
  dynamoReadUnits: number;
  /** Entries written for the sweeper, each read once by a later sweep (charged below, then dropped). */
  watchEntries: number;
}
const zero = (): Tally => ({
  transitions: 0,
  expressExecutions: 0,
  expressGbSeconds: 0,
  lambdaInvocations: 0,
  lambdaGbSeconds: 0,
  dynamoWriteUnits: 0,
  dynamoReadUnits: 0,
  watchEntries: 0,
});

function countCapacity(client: DynamoDBClient, tally: () => Tally): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReturnConsumedCapacity?: string; TableName?: string };
      input.ReturnConsumedCapacity = 'TOTAL';
      if (context.commandName === 'PutItemCommand' && input.TableName?.endsWith('-watch')) tally().watchEntries++;
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] }).ConsumedCapacity;
      const units = [consumed ?? []].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      if (/^(Put|Update|Delete)Item|TransactWriteItems|BatchWriteItem/.test(context.commandName ?? '')) tally().dynamoWriteUnits += units;
      else tally().dynamoReadUnits += units;
      return out;
    },
    { step: 'initialize', name: 'countCapacity' },
  );
}

function usdPerMillion(t: Tally): number {
  const usd =
    t.transitions * PRICES.standardTransition +
    t.expressExecutions * PRICES.expressRequest +
    t.expressGbSeconds * PRICES.expressGbSecond +
    t.lambdaInvocations * PRICES.lambdaRequest +
    t.lambdaGbSeconds * PRICES.lambdaGbSecond +
    t.dynamoWriteUnits * PRICES.write +
    t.dynamoReadUnits * PRICES.read;
  return usd * 1e6;
}

async function main(): Promise<void> {
  let current = zero();
  const agentKey = 'tr_cost_agent_key_0123456789abcdef';
  const approverKey = 'tr_cost_approver_key_0123456789ab';
  const bench = await startBenchStack({
    name: 'cost',
    principals: [
      { id: 'agent', key: agentKey, roles: ['agent'], tools: '*' },
      { id: 'approver', key: approverKey, roles: ['approver'], tools: [] },
    ],
    instrument: (client) => countCapacity(client, () => current),
    stack: {
      sweepIntervalMs: 3_600_000,
      instrument: {
        invoked(fn: LifecycleFunction, ms: number) {
          current.lambdaInvocations++;
          current.lambdaGbSeconds += ((FUNCTIONS[fn].memoryMb ?? DEFAULT_MEMORY_MB) / 1024) * (ms / 1000);
        },
        executed(e: ExecutionSummary) {
          if (e.machine === 'STANDARD') current.transitions += e.transitions;
          else {
            current.expressExecutions++;
            current.expressGbSeconds += PRICES.expressGb * Math.ceil(e.durationMs / 100) * 0.1;
          }
        },
      },
    },
  });
  const { stack } = bench;
  const request = async (path: string, key: string, body?: unknown, headers: Record<string, string> = {}) => {
    const started = performance.now();
    const res = await fetch(`${stack.apiUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    // The API is a Lambda too: one invocation per request, for as long as it waits.
    current.lambdaInvocations++;
    current.lambdaGbSeconds += ((FUNCTIONS.Api.memoryMb ?? DEFAULT_MEMORY_MB) / 1024) * ((performance.now() - started) / 1000);
    return json;
  };
  // The measurement's own reads go through a client of their own, so they are not counted as the call's.
  const observer = localClient(bench.dynamoEndpoint);
  const observed = makeDynamoStore(makeDocumentClient(observer), stack.tables);
  const settled = async (operationId: string) => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const op = await observed.getOperation(operationId);
      if (op?.state === 'reported') return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${operationId} did not settle`);
  };
  /** Lets the executions of the last call finish, so their counts land in its path. */
  const quiet = () => new Promise((r) => setTimeout(r, 300));

  let n = 0;
  const paths: Record<string, (runId: string) => Promise<void>> = {
    read: async (runId) => {
      const env = await request(
        `/v1/runs/${runId}/tool-calls`,
        agentKey,
        { callId: `c${n++}`, turn: 1, name: 'get_order', arguments: { orderId: 'ord_3' } },
        { prefer: 'wait=25' },
      );
      await settled(env.logical_operation_id);
    },
    write: async (runId) => {
      const env = await request(
        `/v1/runs/${runId}/tool-calls`,
        agentKey,
        { callId: `c${n++}`, turn: 1, name: 'charge_card', arguments: { amount: 1000, currency: 'USD', customer: `cus_${n}` } },
        { prefer: 'wait=25' },
      );
      await settled(env.logical_operation_id);
    },
    write_with_one_retry: async (runId) => {
      await fetch(`${stack.sandboxUrl}/_sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ route: 'POST /v1/charges', mode: 'fail_503', count: 1 }),
      });
      const env = await request(
        `/v1/runs/${runId}/tool-calls`,
        agentKey,
        { callId: `c${n++}`, turn: 1, name: 'charge_card', arguments: { amount: 1000, currency: 'USD', customer: `cus_${n}` } },
        { prefer: 'wait=25' },
      );
      if (env.status !== 'succeeded') throw new Error(`retry path: ${JSON.stringify(env)}`);
      await settled(env.logical_operation_id);
    },
    approval: async (runId) => {
      const pending = await request(
        `/v1/runs/${runId}/tool-calls`,
        agentKey,
        { callId: `c${n++}`, turn: 1, name: 'charge_card', arguments: { amount: 75_000, currency: 'USD', customer: `cus_${n}` } },
        { prefer: 'wait=25' },
      );
      const list = await request('/v1/approvals?status=pending', approverKey);
      const link = new URL(list.approvals.find((a: { operationId: string }) => a.operationId === pending.operationId).url);
      await request(link.pathname, approverKey, { decision: 'approve', sig: link.searchParams.get('sig') });
      await settled(pending.operationId);
    },
  };

  try {
    const runId = (await request('/v1/runs', agentKey, { budgets: { maxSpendCents: 100_000_000 } })).runId as string;
    await paths.read(runId);
    await quiet();
    const results: Record<string, Tally & { usdPerMillion: number }> = {};
    for (const [name, path] of Object.entries(paths)) {
      const sum = zero();
      for (let i = 0; i < CALLS; i++) {
        current = zero();
        await path(runId);
        await quiet();
        for (const key of Object.keys(sum) as (keyof Tally)[]) sum[key] += current[key];
      }
      const per = Object.fromEntries(
        Object.entries(sum).map(([k, v]) => [k, Math.round((v / CALLS) * 10_000) / 10_000]),
      ) as unknown as Tally;
      results[name] = { ...per, usdPerMillion: Math.round(usdPerMillion(per) * 100) / 100 };
    }
    // The sweeper's share: one sweep, late enough that every entry is due, over all the entries written.
    current = zero();
    const entries = Object.values(results).reduce((sum, r) => sum + r.watchEntries * CALLS, 0) + 1;
    await sweep({ ...stack.deps, now: () => Date.now() + 24 * 3600_000 }, 10_000);
    const readsPerEntry = current.dynamoReadUnits / entries;
    for (const r of Object.values(results)) {
      r.dynamoReadUnits = Math.round((r.dynamoReadUnits + r.watchEntries * readsPerEntry) * 10_000) / 10_000;
      r.usdPerMillion = Math.round(usdPerMillion(r) * 100) / 100;
    }
    console.log(`sweeper: ${readsPerEntry.toFixed(3)} read units per watch entry, over one sweep of ${entries} entries`);
    console.log('per call, averaged over', CALLS, 'calls each (express = calls that need no person):');
    console.table(results);
    console.log('left out: API Gateway (per request, the same for any peer), SNS for approval notices, CloudWatch logs');
    // The target's subject: calls that need no approval, on the path they take when the upstream answers.
    // A retry is its own path above: most of its extra is the API Lambda billed while it waits out the backoff.
    const noApproval = Math.max(results.read.usdPerMillion, results.write.usdPerMillion);
    console.log(
      JSON.stringify({
        paths: Object.fromEntries(
          Object.entries(results).map(([k, v]) => [
            k,
            {
              transitions: v.transitions,
              expressExecutions: v.expressExecutions,
              lambdaInvocations: v.lambdaInvocations,
              lambdaGbSeconds: v.lambdaGbSeconds,
              dynamoWriteUnits: v.dynamoWriteUnits,
              dynamoReadUnits: v.dynamoReadUnits,
              usdPerMillion: v.usdPerMillion,
            },
          ]),
        ),
        noApprovalUsdPerMillion: noApproval,
      }),
    );
  } finally {
    observer.destroy();
    await bench.stop();
  }
}

runMain(main);
