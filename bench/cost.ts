import '../local/env-defaults';
import { randomBytes, randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';
import { createClient, type Envelope } from '../functions/client';
import { sweepPart } from '../functions/steps/resume';
import { SWEEPER_PARTS } from '../infra/tool-runner';
import { isRollupShard } from '../functions/adapters/dynamo-rollups';
import type { ExecutionSummary } from '../local/sfn-endpoint';
import type { StackMeter } from '../local/stack';
import type { AwsCall } from '../local/template/aws-gateway';
import { ensureAssembly, readAssembly } from '../local/template/assembly';
import { runMain, startBenchStack } from './bench-stack';
import { rollupCost } from './rollup-cost';
import { DEFAULT_RETENTION_SECONDS, heldByteSeconds, ITEM_OVERHEAD_BYTES, recoveredTables, storageUsd } from './storage-cost';
import {
  accessLogLine,
  deployedShape,
  FULL_VCPU_MEMORY_MB,
  executionLogLines,
  ingestedBytes,
  logLines,
  lambdaDurationMs,
  platformLines,
  PRICES,
  type DeployedShape,
} from './cost-model';

/**
 * `npm run cost`: what AWS would bill per call path, counted on the stack built from the synthesized CDK
 * template (`TOOLRUNNER_HANDLERS=template`): every HTTP API request (the client's status polls too), every
 * Lambda invocation with its template memory and measured duration, every execution (transitions, or Express
 * requests and duration), every AWS call a function makes (DynamoDB capacity units as DynamoDB Local reports
 * them, S3 and SNS requests), the log lines the functions write, the lines Lambda and the state machines add
 * at the template's log settings, and X-Ray traces at the template's tracing. The calls are real: the tools'
 * upstream (the sandbox) holds each answer `upstreamMs` and carries the scenario's bytes.
 */
const Scenario = z.object({
  /** Bytes of a call's arguments as the agent sends them (JSON), carried by `charge_card`'s metadata. */
  argsBytes: z.coerce.number().int().min(64).max(16_384).default(1024),
  /** Bytes of the tool's result (JSON), carried by the order `get_order` reads. */
  resultBytes: z.coerce.number().int().min(256).max(1_000_000).default(4096),
  /** How long the tool's upstream takes to answer. */
  upstreamMs: z.coerce.number().int().min(0).max(20_000).default(200),
  callsPerPath: z.coerce.number().int().min(1).max(100).default(5),
  /** Uncounted calls (reads and writes in turn) that warm the functions first, as a container serving many is. */
  warmupCalls: z.coerce.number().int().min(1).max(1000).default(40),
  /**
   * Steady traffic the Secrets Manager share is priced at: each warm function that reads the config re-reads it
   * at most every 30 s, however many calls it serves, so its share per call falls as traffic grows.
   */
  callsPerSecond: z.coerce.number().min(0.01).max(100_000).default(10),
  /** `function` (the construct's default) or `none`: tools in the runner's functions (the template without TOOLS_FUNCTION_NAME). */
  toolIsolation: z.enum(['function', 'none']).default('function'),
});
type Scenario = z.infer<typeof Scenario>;

function scenarioFromArgs(): Scenario {
  const { values } = parseArgs({
    options: {
      'args-bytes': { type: 'string' },
      'result-bytes': { type: 'string' },
      'upstream-ms': { type: 'string' },
      calls: { type: 'string' },
      warmup: { type: 'string' },
      'calls-per-second': { type: 'string' },
      'tool-isolation': { type: 'string' },
    },
  });
  const parsed = Scenario.safeParse({
    argsBytes: values['args-bytes'] ?? process.env.COST_ARGS_BYTES,
    resultBytes: values['result-bytes'] ?? process.env.COST_RESULT_BYTES,
    upstreamMs: values['upstream-ms'] ?? process.env.COST_UPSTREAM_MS,
    callsPerPath: values.calls ?? process.env.COST_CALLS_PER_PATH,
    warmupCalls: values.warmup ?? process.env.COST_WARMUP_CALLS,
    callsPerSecond: values['calls-per-second'] ?? process.env.COST_CALLS_PER_SECOND,
    toolIsolation: values['tool-isolation'] ?? process.env.COST_TOOL_ISOLATION,
  });
  if (!parsed.success) {
    console.error(`npm run cost: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    process.exit(2);
  }
  return parsed.data;
}

interface Tally {
  apiRequests: number;
  apiMeteredRequests: number;
  transitions: number;
  expressExecutions: number;
  expressGbSeconds: number;
  lambdaInvocations: number;
  lambdaGbSeconds: number;
  lambdaUsd: number;
  dynamoWriteUnits: number;
  dynamoReadUnits: number;
  s3Tier1Requests: number;
  s3Tier2Requests: number;
  snsPublishes: number;
  logEvents: number;
  logBytes: number;
  traces: number;
  /** Entries written for the sweeper, each read once by a later sweep (charged below). */
  watchEntries: number;
  /** USD of DynamoDB storage for what the call left in the tables, held until each item's TTL (bench/storage-cost.ts). */
  storageUsd: number;
  /** USD of point-in-time recovery of the same bytes, on the tables the template enables it for. */
  pitrUsd: number;
  /** Invocations of functions that read the config secret (a share of their containers' re-reads is charged). */
  configReaders: Set<string>;
}
const zero = (): Tally => ({
  apiRequests: 0,
  apiMeteredRequests: 0,
  transitions: 0,
  expressExecutions: 0,
  expressGbSeconds: 0,
  lambdaInvocations: 0,
  lambdaGbSeconds: 0,
  lambdaUsd: 0,
  dynamoWriteUnits: 0,
  dynamoReadUnits: 0,
  s3Tier1Requests: 0,
  s3Tier2Requests: 0,
  snsPublishes: 0,
  logEvents: 0,
  logBytes: 0,
  traces: 0,
  watchEntries: 0,
  storageUsd: 0,
  pitrUsd: 0,
  configReaders: new Set(),
});
/** Secrets Manager: per 10,000 API calls; and how often a warm function re-reads the config (config-source.ts). */
const SECRETS_MANAGER_CALL_USD = 0.05 / 10_000;
const CONFIG_MAX_AGE_SECONDS = 30;

const WRITES = /^(Put|Update|Delete)Item$|^TransactWriteItems$|^BatchWriteItem$/;

/**
 * USD per million calls, by what AWS bills it as. Secrets Manager: each function on the path keeps a warm
 * container that re-reads the config every 30 s; at `callsPerSecond` of such calls, each call's share of
 * those reads is (functions on the path / 30) / callsPerSecond.
 */
function components(t: Tally, shape: DeployedShape, callsPerSecond: number) {
  const usd = {
    secretsManager: ((t.configReaders.size / CONFIG_MAX_AGE_SECONDS) * SECRETS_MANAGER_CALL_USD) / callsPerSecond,
    apiGateway: t.apiMeteredRequests * (shape.api.type === 'HTTP' ? PRICES.httpApiRequest : PRICES.restApiRequest),
    stepFunctions:
      t.transitions * PRICES.standardTransition + t.expressExecutions * PRICES.expressRequest + t.expressGbSeconds * PRICES.expressGbSecond,
    lambda: t.lambdaUsd,
    dynamodb: t.dynamoWriteUnits * PRICES.dynamoWriteUnit + t.dynamoReadUnits * PRICES.dynamoReadUnit,
    dynamodbStorage: t.storageUsd,
    pitr: t.pitrUsd,
    logs: (t.logBytes / 1e9) * PRICES.logsIngestedGb,
    xray: t.traces * PRICES.xrayTraceRecorded,
    s3: t.s3Tier1Requests * PRICES.s3Tier1Request + t.s3Tier2Requests * PRICES.s3Tier2Request,
    sns: t.snsPublishes * PRICES.snsPublish,
  };
  return Object.fromEntries(Object.entries(usd).map(([k, v]) => [k, round(v * 1e6, 3)])) as typeof usd;
}
const round = (n: number, digits = 4) => Math.round(n * 10 ** digits) / 10 ** digits;
const sumOf = (c: Record<string, number>) =>
  round(
    Object.values(c).reduce((a, b) => a + b, 0),
    2,
  );

/** Words for line items: the result compresses as a real order's JSON would (3x), not as repeated filler. */
const WORDS =
  'cotton shirt blue large small medium wool sock pack of three leather belt brown black steel water bottle insulated ceramic mug white coffee beans organic roast dark light notebook ruled paper pen gel ink charger usb cable braided wireless earbuds case silicone lamp desk led bulb warm kettle electric glass jar lid towel bath linen pillow cover queen'.split(
    ' ',
  );

/** An order whose JSON is `bytes` long (give or take a line item), as `get_order` returns it: random SKUs, prices and descriptions. */
function orderOfSize(id: string, bytes: number) {
  const order = {
    status: 'paid',
    customer: 'cus_cost',
    totalCents: 0,
    shippingAddress: { line1: '1 Main Street', city: 'Springfield', postalCode: '10001', country: 'US' },
    items: [] as { sku: string; description: string; quantity: number; unitCents: number }[],
  };
  while (Buffer.byteLength(JSON.stringify({ id, ...order })) < bytes) {
    const description = Array.from({ length: 2 + randomInt(5) }, () => WORDS[randomInt(WORDS.length)]).join(' ');
    const item = {
      sku: `sku_${randomBytes(6).toString('base64url')}`,
      description,
      quantity: 1 + randomInt(4),
      unitCents: randomInt(100, 20_000),
    };
    order.items.push(item);
    order.totalCents += item.quantity * item.unitCents;
  }
  return order;
}

/** Metadata that makes a charge's arguments `bytes` long as JSON: random values, which compress as little as any would. */
function chargeArguments(amount: number, customer: string, bytes: number) {
  const args = { amount, currency: 'USD', customer, metadata: [] as { key: string; value: string }[] };
  for (let i = 0; Buffer.byteLength(JSON.stringify(args)) < bytes; i++) {
    const room = bytes - Buffer.byteLength(JSON.stringify(args)) - 30;
    args.metadata.push({
      key: `k${i}`,
      value: randomBytes(375)
        .toString('base64url')
        .slice(0, Math.max(1, Math.min(500, room))),
    });
  }
  return args;
}

async function main(): Promise<void> {
  const scenario = scenarioFromArgs();
  const { dir } = await ensureAssembly({ onProgress: (line) => console.log(line) });
  const template = readAssembly(dir).template;
  const shape = deployedShape(template);
  const recovered = recoveredTables(template);
  const apiShape = shape.api;
  let current = zero();
  /** Each function's invocation durations on the path being counted, for the line that explains `lambda`. */
  let durations = new Map<string, { measuredMs: number; busyMs: number; ms: number }[]>();
  /** Each path's DynamoDB capacity by function, action and table, for the line that explains `dynamodb`. */
  let units = new Map<string, number>();
  /** And the bytes of those calls' requests (DynamoDB JSON: item and key sizes, with type tags and names). */
  let requestBytes = new Map<string, number>();
  /** Each path's log events and ingested bytes by who wrote them, for the line that explains `logs`. */
  let logSources = new Map<string, { events: number; bytes: number }>();
  const logFrom = (source: string, lines: readonly string[]) => {
    if (!lines.length) return;
    const bytes = ingestedBytes(lines);
    current.logEvents += lines.length;
    current.logBytes += bytes;
    const seen = logSources.get(source) ?? { events: 0, bytes: 0 };
    logSources.set(source, { events: seen.events + lines.length, bytes: seen.bytes + bytes });
  };
  let sweeping = false;
  /** Every watch entry the stack wrote, the warm-up's too: the sweep below reads them all. */
  let watchEntriesWritten = 0;
  let rollupFlushesLeftOut = 0;
  const machineOf = (e: ExecutionSummary) =>
    shape.machines.get(e.machineArn.split(':').pop() ?? '') ?? [...shape.machines.values()].find((m) => m.type === e.machine)!;
  // A call's trace starts where the API Lambda samples it (Active: Lambda's fixed rule, nearly every call at low traffic).
  const apiFunctionTraced = {
    value: shape.api.functionId !== undefined && shape.functions.get(shape.api.functionId)?.tracing === 'Active',
  };

  const meter: StackMeter = {
    apiRequest(r) {
      current.apiRequests++;
      current.apiMeteredRequests += Math.max(1, Math.ceil((r.requestBytes + r.responseBytes) / PRICES.httpApiMeteredBytes));
      if (apiShape.accessLogFormat) logFrom('access log', [accessLogLine(apiShape.accessLogFormat, r)]);
      if (apiFunctionTraced.value) current.traces++;
    },
    invoked(fn, measuredMs, busyMs) {
      const f = shape.functions.get(fn.logicalId);
      if (!f) throw new Error(`function ${fn.logicalId} is not in the template`);
      const ms = lambdaDurationMs(measuredMs, busyMs, fn.memoryMb);
      const gbSeconds = (fn.memoryMb / 1024) * (Math.ceil(ms) / 1000);
      const key = `${shortName(fn.logicalId)} ${fn.memoryMb} MB`;
      durations.set(key, [...(durations.get(key) ?? []), { measuredMs, busyMs, ms }]);
      current.lambdaInvocations++;
      if (fn.environment.CONFIG_SECRET_ARN) current.configReaders.add(fn.logicalId);
      current.lambdaGbSeconds += gbSeconds;
      current.lambdaUsd += PRICES.lambdaRequest + gbSeconds * PRICES.lambdaGbSecond[f.architecture];
      logFrom(
        `${shortName(fn.logicalId)} (Lambda's lines)`,
        platformLines(f, { durationMs: ms, memoryMb: fn.memoryMb, traced: f.tracing === 'Active' }),
      );
    },
    logged(fn, chunk) {
      const lines = logLines(chunk.toString('utf8'));
      // Metric lines (EMF) apart from the rest: alarms read them.
      const emf = lines.filter((line) => line.startsWith('{"_aws":'));
      if (emf.length) logFrom(`${shortName(fn.logicalId)} metrics`, emf);
      if (emf.length < lines.length)
        logFrom(
          shortName(fn.logicalId),
          lines.filter((line) => !line.startsWith('{"_aws":')),
        );
    },
    executed(e) {
      const machine = machineOf(e);
      if (e.machine === 'STANDARD') current.transitions += e.transitions;
      else {
        current.expressExecutions++;
        const seconds = (Math.ceil(e.durationMs / PRICES.expressDurationStepMs) * PRICES.expressDurationStepMs) / 1000;
        current.expressGbSeconds += (PRICES.expressMemoryMb / 1024) * seconds;
      }
      logFrom(`${e.machine === 'STANDARD' ? 'Standard' : 'Express'} machine`, executionLogLines(machine, e));
      // An execution started by a traced API invocation joins its trace; on its own it samples like Lambda's rule.
      if (machine.tracing && !apiFunctionTraced.value) current.traces++;
    },
    awsCall(call) {
      // The overview's rollup flush: one write per process every 10 s whatever the traffic, so it lands in a path's few
      // calls by chance; its share of a call is priced on its own (bench/rollup-cost.ts), not here.
      if (isRollupWrite(call)) {
        rollupFlushesLeftOut++;
        return;
      }
      if (call.service === 'dynamodb') {
        const consumed = (call.consumed ?? []).reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
        if (WRITES.test(call.operation)) current.dynamoWriteUnits += consumed;
        else current.dynamoReadUnits += consumed;
        for (const c of call.consumed ?? []) {
          const key = `${shortName(call.session)} ${call.operation} ${shortName(c.TableName ?? '?')}`;
          units.set(key, (units.get(key) ?? 0) + (c.CapacityUnits ?? 0));
        }
        const key = `${shortName(call.session)} ${call.operation}`;
        requestBytes.set(key, (requestBytes.get(key) ?? 0) + call.requestBytes);
        if (call.operation === 'PutItem' && call.resources.some((r) => r.endsWith(`table/${watchTable}`))) {
          current.watchEntries++;
          watchEntriesWritten++;
        }
      } else if (call.service === 's3') {
        if (/^(Put|Copy|Post|List|Create|Upload|Complete)/.test(call.operation)) current.s3Tier1Requests++;
        else current.s3Tier2Requests++;
      } else if (call.service === 'sns' && call.operation === 'Publish') current.snsPublishes++;
    },
  };

  const agentKey = 'tr_cost_agent_key_0123456789abcdef';
  const approverKey = 'tr_cost_approver_key_0123456789ab';
  const limitedKey = 'tr_cost_limited_key_01234567890ab';
  let watchTable: string | undefined;
  const sweepClient: { client?: DynamoDBClient } = {};
  const bench = await startBenchStack({
    name: 'cost',
    principals: [
      { id: 'agent', key: agentKey, roles: ['agent'], tools: '*' },
      { id: 'approver', key: approverKey, roles: ['approver'], tools: [] },
      // An agent under a per-day spend limit: its admissions also move its day's counter, in the same transaction.
      { id: 'limited', key: limitedKey, roles: ['agent'], tools: '*' },
    ],
    // A model's price, for the model-call path (a reservation before the call, its settlement after).
    config: {
      modelPrices: { 'bench/model': { inputPerMillionCents: 100, outputPerMillionCents: 400 } },
      spendLimits: [{ principal: 'limited', perDayCents: 1_000_000_000 }],
    },
    // The stack's own client (its restart sweep, and the sweep below): counted only while it sweeps for the bill.
    instrument: (client) => {
      sweepClient.client = client;
      countSweep(
        client,
        () => sweeping,
        () => current,
      );
    },
    stack: {
      handlers: 'template',
      sweepIntervalMs: 3_600_000,
      meter,
      onProgress: (line) => console.log(`  ${line}`),
      // `none`: what the construct deploys with toolIsolation "none", where no function is told of Tools.
      editTemplate:
        scenario.toolIsolation === 'none'
          ? (template) => {
              for (const r of Object.values(template.Resources) as {
                Type: string;
                Properties: { Environment?: { Variables?: Record<string, unknown> } };
              }[])
                if (r.Type === 'AWS::Lambda::Function') delete r.Properties.Environment?.Variables?.TOOLS_FUNCTION_NAME;
            }
          : undefined,
    },
  });
  const { stack } = bench;
  watchTable = stack.tables.watch;

  const agent = createClient({ baseUrl: stack.apiUrl, apiKey: agentKey });
  const approver = createClient({ baseUrl: stack.apiUrl, apiKey: approverKey });
  const limited = createClient({ baseUrl: stack.apiUrl, apiKey: limitedKey });
  let limitedRunId = '';
  const sandbox = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${stack.sandboxUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`sandbox ${method} ${path}: ${res.status} ${await res.text()}`);
  };
  /** The next call on this route answers after `upstreamMs` (the sandbox's commit_then_timeout holds a done answer). */
  const slowUpstream = (route: string, delayMs = scenario.upstreamMs) =>
    delayMs > 0 ? sandbox('POST', '/_sandbox/faults', { route, mode: 'commit_then_timeout', delayMs }) : undefined;
  const settled = async (operationId: string) => {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      if ((await stack.deps.store.getOperation(operationId))?.state === 'reported') return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${operationId} did not settle`);
  };
  /** Lets the last call's executions and log lines land in its path. */
  const quiet = () => new Promise((r) => setTimeout(r, 500));

  const orderId = 'ord_cost';
  await sandbox('PUT', `/_sandbox/orders/${orderId}`, orderOfSize(orderId, scenario.resultBytes));
  let n = 0;
  const carried = { argsBytes: new Map<string, number>(), resultBytes: new Map<string, number>() };
  const envelopeOf = async (
    runId: string,
    path: string,
    name: string,
    args: Record<string, unknown>,
    caller = agent,
  ): Promise<Envelope> => {
    carried.argsBytes.set(path, Buffer.byteLength(JSON.stringify(args)));
    const answer = await caller.callTool(runId, { callId: `c${n++}`, turn: 1, name, arguments: args });
    // As an agent would: a call that waits for a person is watched (GET, growing pauses) until it has its envelope.
    const envelope = answer.kind === 'envelope' ? answer.envelope : await caller.waitForOperation(answer.operationId);
    carried.resultBytes.set(path, Buffer.byteLength(JSON.stringify((envelope as { result?: unknown }).result ?? null)));
    return envelope;
  };
  const charge = (amount: number) => chargeArguments(amount, `cus_${n}`, scenario.argsBytes);

  const paths: Record<string, (runId: string) => Promise<void>> = {
    read: async (runId) => {
      await slowUpstream('GET /v1/orders/{id}');
      const env = await envelopeOf(runId, 'read', 'get_order', { orderId });
      await settled(env.logical_operation_id);
    },
    write: async (runId) => {
      await slowUpstream('POST /v1/charges');
      const env = await envelopeOf(runId, 'write', 'charge_card', charge(1000));
      await settled(env.logical_operation_id);
    },
    // The write above by a principal under `spendLimits`: the admitting transaction also moves its day's counter.
    write_with_spend_limit: async () => {
      await slowUpstream('POST /v1/charges');
      const env = await envelopeOf(limitedRunId, 'write_with_spend_limit', 'charge_card', charge(1000), limited);
      await settled(env.logical_operation_id);
    },
    write_with_one_retry: async (runId) => {
      await sandbox('POST', '/_sandbox/faults', { route: 'POST /v1/charges', mode: 'fail_503', count: 1 });
      await slowUpstream('POST /v1/charges');
      const env = await envelopeOf(runId, 'write_with_one_retry', 'charge_card', charge(1000));
      if (env.status !== 'succeeded') throw new Error(`retry path: ${JSON.stringify(env)}`);
      await settled(env.logical_operation_id);
    },
    upstream_2s: async (runId) => {
      await slowUpstream('POST /v1/charges', 2000);
      const env = await envelopeOf(runId, 'upstream_2s', 'charge_card', charge(1000));
      await settled(env.logical_operation_id);
    },
    mcp: async () => {
      await slowUpstream('POST /v1/charges');
      const args = charge(1000);
      carried.argsBytes.set('mcp', Buffer.byteLength(JSON.stringify(args)));
      const reply = await mcpRequest({ jsonrpc: '2.0', id: n++, method: 'tools/call', params: { name: 'charge_card', arguments: args } });
      const envelope = McpEnvelope.parse(reply).result.structuredContent;
      carried.resultBytes.set('mcp', Buffer.byteLength(JSON.stringify(envelope.result ?? null)));
      await settled(envelope.logical_operation_id);
    },
    // A tool with a lock key: its first attempt runs on the Express machine (Execute), not in the API.
    express: async (runId) => {
      await slowUpstream('POST /v1/orders/{id}/shipping-address');
      const env = await envelopeOf(runId, 'express', 'update_shipping_address', {
        orderId,
        address: { line1: `${n} Main Street`, city: 'Springfield', postalCode: '10001', country: 'US' },
      });
      if (env.status !== 'succeeded') throw new Error(`express path: ${JSON.stringify(env)}`);
      await settled(env.logical_operation_id);
    },
    // A model call's reservation and its settlement: one pair (two API requests), nothing executed.
    model_call: async (runId) => {
      const reserved = await agent.reserveModelCall(runId, {
        requestId: `m${n++}`,
        model: 'bench/model',
        inputTokens: 2000,
        maxOutputTokens: 1000,
      });
      if (reserved.status !== 'reserved') throw new Error(`model-call path: ${JSON.stringify(reserved)}`);
      await agent.settleModelCall(runId, reserved.modelCallId, { inputTokens: 2000, outputTokens: 300 });
    },
    approval: async (runId) => {
      await slowUpstream('POST /v1/charges');
      const args = charge(75_000);
      carried.argsBytes.set('approval', Buffer.byteLength(JSON.stringify(args)));
      const answer = await agent.callTool(runId, { callId: `c${n++}`, turn: 1, name: 'charge_card', arguments: args });
      if (answer.kind !== 'pending') throw new Error(`approval path: expected a pending call, got ${JSON.stringify(answer)}`);
      // The approver acts on the notice the runner sent (its link names the operation): one decision request.
      await approver.approve(answer.operationId);
      const envelope = await agent.waitForOperation(answer.operationId);
      carried.resultBytes.set('approval', Buffer.byteLength(JSON.stringify((envelope as { result?: unknown }).result ?? null)));
      await settled(answer.operationId);
    },
  };

  // One MCP session for the MCP path (its initialize is not counted: a client opens it once for many calls).
  let mcpSession = '';
  const mcpRequest = async (body: unknown): Promise<unknown> => {
    const res = await fetch(`${stack.apiUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agentKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        ...(mcpSession ? { 'mcp-session-id': mcpSession } : {}),
      },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`/mcp: ${res.status} ${await res.text()}`);
    mcpSession ||= res.headers.get('mcp-session-id') ?? '';
    return res.status === 202 ? undefined : res.json();
  };
  /** A long poll while a person decides: the agent asks again for its call, waiting up to 25 s (`Prefer: wait=25`). */
  const longPoll = async (runId: string) => {
    const args = charge(75_000);
    const callId = `c${n++}`;
    const first = await agent.callTool(runId, { callId, turn: 1, name: 'charge_card', arguments: args }, { waitSeconds: 0 });
    if (first.kind !== 'pending') throw new Error(`long poll: expected a pending call, got ${JSON.stringify(first)}`);
    await quiet();
    const counted = current;
    current = zero();
    await agent.callTool(runId, { callId, turn: 1, name: 'charge_card', arguments: args }, { waitSeconds: 25 });
    await quiet();
    const poll = current;
    current = counted;
    await approver.approve(first.operationId);
    await settled(first.operationId);
    return poll;
  };

  try {
    await mcpRequest({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'npm-run-cost', version: '1' } },
    });
    await mcpRequest({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const runId = (await agent.createRun({ budgets: { maxSpendCents: 100_000_000, maxToolCalls: 100_000, maxTurns: 10_000 } })).runId;
    limitedRunId = (await limited.createRun({ budgets: { maxSpendCents: 100_000_000, maxToolCalls: 100_000, maxTurns: 10_000 } })).runId;
    // Calls first, not counted: every function's first invocation reads the config and warms its clients, and
    // a container that serves a million calls runs them with its code compiled (busy time falls several-fold).
    await paths.approval(runId);
    await paths.mcp(runId);
    await paths.express(runId);
    for (let i = 0; i < 5; i++) await paths.model_call(runId);
    for (let i = 0; i < scenario.warmupCalls; i++) await (i % 2 ? paths.write : paths.read)(runId);
    await quiet();
    const results: Record<string, Tally> = {};
    const timings: Record<string, string> = {};
    const dynamoByCall: Record<string, string> = {};
    const storageByPath: Record<string, string> = {};
    const logsByPath: Record<string, string> = {};
    for (const [name, path] of Object.entries(paths)) {
      const sum = zero();
      durations = new Map();
      units = new Map();
      requestBytes = new Map();
      logSources = new Map();
      // What the path's calls leave in the tables, priced for as long as each item is kept.
      const scannedAt = Date.now();
      const heldBefore = await heldByteSeconds(sweepClient.client!, stack.tables, scannedAt);
      for (let i = 0; i < scenario.callsPerPath; i++) {
        current = zero();
        await path(runId);
        await quiet();
        addTo(sum, current);
      }
      const heldAfter = await heldByteSeconds(sweepClient.client!, stack.tables, scannedAt);
      const held = storageUsd(
        Object.fromEntries(Object.entries(heldAfter).map(([table, b]) => [table, Math.max(0, b - (heldBefore[table] ?? 0))])),
        recovered,
      );
      sum.storageUsd += held.storage;
      sum.pitrUsd += held.pitr;
      storageByPath[name] = Object.entries(heldAfter)
        .map(
          ([table, b]) => [table, Math.max(0, b - (heldBefore[table] ?? 0)) / scenario.callsPerPath / DEFAULT_RETENTION_SECONDS] as const,
        )
        .filter(([, bytes]) => bytes >= 1)
        .map(([table, bytes]) => `${table} ${Math.round(bytes)}${recovered.has(table as never) ? ' (recovered)' : ''}`)
        .join(', ');
      const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
      timings[name] = [...durations]
        .map(
          ([fn, runs]) =>
            `${fn} ${(runs.length / scenario.callsPerPath).toFixed(1)}x ${mean(runs.map((r) => r.ms))} ms ` +
            `(measured ${mean(runs.map((r) => r.measuredMs))}, busy ${mean(runs.map((r) => r.busyMs))})`,
        )
        .join(', ');
      dynamoByCall[name] = [
        [...units].map(([call, u]) => `${call} ${round(u / scenario.callsPerPath, 2)}`).join(', '),
        `(request bytes: ${[...requestBytes].map(([call, b]) => `${call} ${Math.round(b / scenario.callsPerPath)}`).join(', ')})`,
      ].join(' ');
      logsByPath[name] = [...logSources]
        .map(
          ([source, l]) => `${source} ${round(l.events / scenario.callsPerPath, 1)} (${Math.round(l.bytes / scenario.callsPerPath)} bytes)`,
        )
        .join(', ');
      results[name] = averageOf(sum, scenario.callsPerPath);
    }
    // Long polls, each 25 s: two, counted per poll (not per call).
    {
      const sum = zero();
      durations = new Map();
      for (let i = 0; i < 2; i++) addTo(sum, await longPoll(runId));
      results.long_poll = averageOf(sum, 2);
      timings.long_poll = [...durations].map(([fn, runs]) => `${fn} ${runs.length}x`).join(', ');
    }
    // The sweeper's share: one sweep, late enough that every entry is due, over all the entries written.
    current = zero();
    const entries = watchEntriesWritten;
    sweeping = true;
    // As the deployed sweeper does it: each part walks its shards' due entries, reading each operation once.
    const later = { ...stack.deps, now: () => Date.now() + 24 * 3600_000 };
    for (let part = 0; part < SWEEPER_PARTS; part++) await sweepPart(later, { part, parts: SWEEPER_PARTS, more: () => true });
    sweeping = false;
    const readsPerEntry = current.dynamoReadUnits / entries;
    for (const r of Object.values(results)) r.dynamoReadUnits += r.watchEntries * readsPerEntry;

    const report = Object.fromEntries(
      Object.entries(results).map(([name, t]) => {
        const c = components(t, shape, scenario.callsPerSecond);
        return [
          name,
          {
            apiRequests: round(t.apiRequests, 2),
            transitions: round(t.transitions, 2),
            expressExecutions: round(t.expressExecutions, 2),
            lambdaInvocations: round(t.lambdaInvocations, 2),
            lambdaGbSeconds: round(t.lambdaGbSeconds),
            dynamoWriteUnits: round(t.dynamoWriteUnits, 2),
            dynamoReadUnits: round(t.dynamoReadUnits, 2),
            s3Requests: round(t.s3Tier1Requests + t.s3Tier2Requests, 2),
            logEvents: round(t.logEvents, 1),
            logBytes: Math.round(t.logBytes),
            traces: round(t.traces, 2),
            argsBytes: carried.argsBytes.get(name) ?? 0,
            resultBytes: carried.resultBytes.get(name) ?? 0,
            usdPerMillion: sumOf(c),
            components: c,
          },
        ];
      }),
    );
    console.log(`deployed shape (from ${dir}): ${describeShape(shape)}`);
    console.log(`sweeper: ${readsPerEntry.toFixed(3)} read units per watch entry, over one sweep of ${entries} entries`);
    console.log(`per call, averaged over ${scenario.callsPerPath} calls each; scenario ${JSON.stringify(scenario)}:`);
    console.table(Object.fromEntries(Object.entries(report).map(([k, { components: _c, ...v }]) => [k, v])));
    console.log(
      `Lambda per call (invocations, mean duration on Lambda: measured, with the busy part at ${FULL_VCPU_MEMORY_MB} MB per vCPU), by function:`,
    );
    for (const [name, line] of Object.entries(timings)) console.log(`  ${name}: ${line}`);
    console.log('DynamoDB capacity units per call, by function, action and table:');
    for (const [name, line] of Object.entries(dynamoByCall)) console.log(`  ${name}: ${line}`);
    console.log(
      `DynamoDB bytes per call held ${DEFAULT_RETENTION_SECONDS / 86_400} days (byte-seconds until each item's TTL, over ${DEFAULT_RETENTION_SECONDS / 86_400} days; index copies and ${ITEM_OVERHEAD_BYTES} bytes an item included), by table:`,
    );
    for (const [name, line] of Object.entries(storageByPath)) console.log(`  ${name}: ${line}`);
    console.log('CloudWatch Logs events per call (ingested bytes, with 26 bytes an event), by who writes them:');
    for (const [name, line] of Object.entries(logsByPath)) console.log(`  ${name}: ${line}`);
    console.log('USD per million calls, by component:');
    console.table(Object.fromEntries(Object.entries(report).map(([k, v]) => [k, { ...v.components, total: v.usdPerMillion }])));
    console.log(
      'not counted: data transfer out (free within the region; $0.09/GB to the internet, about $0.0004 per call at the default scenario), log storage, on-demand backups, monthly fixed costs (custom metrics, alarms, the dashboard, the secret), INIT time (a cold start, billed since August 2025, once per container however many calls it serves)',
    );
    // The target's subject: calls that need no approval, on the path they take when the upstream answers.
    const noApproval = Math.max(report.read.usdPerMillion, report.write.usdPerMillion);
    const dearer = report.read.usdPerMillion >= report.write.usdPerMillion ? 'read' : 'write';
    const scenarios = Object.fromEntries(
      (
        [
          ['default', dearer],
          ['upstream_2s', 'upstream_2s'],
          ['mcp', 'mcp'],
          ['express', 'express'],
          ['approval', 'approval'],
          ['long_poll', 'long_poll'],
        ] as const
      ).map(([scenarioName, path]) => [scenarioName, { ...report[path].components, total: report[path].usdPerMillion }]),
    );
    console.log(
      `scenarios (tool isolation ${scenario.toolIsolation}; USD per million calls, long_poll per million 25 s polls; secretsManager at ${scenario.callsPerSecond} calls/s):`,
    );
    console.table(scenarios);
    if (sweepClient.client && watchTable)
      console.log(
        `${await rollupCost(sweepClient.client, watchTable, scenario.callsPerSecond)} (the paths leave out the ${rollupFlushesLeftOut} flushes made during them)`,
      );
    console.log(`model calls: ${report.model_call.usdPerMillion} USD per million reserve+settle pairs (model_call above)`);
    console.log(
      JSON.stringify({
        scenario: { argsBytes: scenario.argsBytes, resultBytes: scenario.resultBytes, upstreamMs: scenario.upstreamMs },
        toolIsolation: scenario.toolIsolation,
        paths: report,
        scenarios,
        noApprovalUsdPerMillion: noApproval,
      }),
    );
  } finally {
    await bench.stop();
  }
}

function addTo(sum: Tally, one: Tally): void {
  for (const key of Object.keys(sum) as (keyof Tally)[]) {
    if (key === 'configReaders') for (const f of one.configReaders) sum.configReaders.add(f);
    else sum[key] += one[key];
  }
}

/** Per call: every count divided by `calls`; the functions that read the config, as they were. */
function averageOf(sum: Tally, calls: number): Tally {
  const mean = Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, typeof v === 'number' ? v / calls : v]));
  return mean as unknown as Tally;
}

/** The envelope an MCP `tools/call` answers with, in `structuredContent`. */
const McpEnvelope = z.object({
  result: z.object({
    isError: z.literal(false),
    structuredContent: z.looseObject({ logical_operation_id: z.string(), result: z.unknown().optional() }),
  }),
});

/** Capacity the stack's own client consumes while `active` (the sweep the bill charges per watch entry). */
function countSweep(client: DynamoDBClient, active: () => boolean, tally: () => Tally): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!active()) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] }).ConsumedCapacity;
      const units = [consumed ?? []].flat().reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      if (WRITES.test(context.commandName?.replace(/Command$/, '') ?? '')) tally().dynamoWriteUnits += units;
      else tally().dynamoReadUnits += units;
      return out;
    },
    { step: 'initialize', name: 'countSweep' },
  );
}

/** An `ADD` to a minute of the overview's rollups (functions/adapters/dynamo-rollups.ts). */
function isRollupWrite(call: AwsCall): boolean {
  return (
    call.service === 'dynamodb' && call.operation === 'UpdateItem' && isRollupShard((call.key?.shard as { S?: string } | undefined)?.S)
  );
}

/** A function's or table's logical id (or role session) without the construct's prefix and CDK's suffixes, e.g. `Api`, `Operations`. */
const shortName = (logicalId: string) => logicalId.replace(/^(.*-)?Runner/, '').replace(/(Function|Table)[0-9A-F]{8}(-\w+)?$/, '');

function describeShape(shape: DeployedShape): string {
  const fns = [...shape.functions.entries()].map(([id, f]) => `${shortName(id)} ${f.tracing}/${f.logFormat}`);
  const machines = [...shape.machines.values()].map((m) => `${m.type} logs ${m.logLevel}${m.tracing ? ', traced' : ''}`);
  return `${shape.api.type} API${shape.api.accessLogFormat ? ' with access logs' : ''}; functions ${fns.join(', ')}; machines ${machines.join('; ')}`;
}

runMain(main);
