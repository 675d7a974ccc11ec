import { type AttributeValue, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { JSON_BOUNDS } from '../../functions/core/json-bounds';
import { RESULT_LIMITS } from '../../functions/core/result-record';
import type { ToolSpec } from '../../functions/core/tool-spec';
import { localClient } from '../../local/dynamodb-local';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * Tools that answer what the runner cannot record or that do not answer at all: the runner names each
 * outcome (`invalid_output`, a timeout at `timeoutMs`), stays responsive, and records large results
 * through the blob store without any item over DynamoDB's 400 KB.
 */
const MiB = 1024 * 1024;
const DEAF_TIMEOUT_MS = 1_000;

const cyclic = () => {
  const value: Record<string, unknown> = { id: 'x' };
  value.self = { back: value };
  return value;
};
/** 2^40 leaves by reference: JSON.stringify would run for hours; the bound stops it at 5 MiB. */
const doubling = () => {
  let node: unknown = 'leaf';
  for (let i = 0; i < 40; i++) node = [node, node];
  return node;
};
const sparse = () => {
  const holes: unknown[] = [];
  holes.length = 1_000_000_000;
  return { holes };
};

const read = (name: string, execute: ToolSpec['execute'], over: Partial<ToolSpec> = {}): ToolSpec => ({
  name,
  description: name,
  inputSchema: z.object({ bytes: z.number().int().nonnegative().optional(), pad: z.string().optional() }),
  outputSchema: z.any(),
  risk: 'read',
  timeoutMs: 5_000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  execute,
  ...over,
});
const write = (name: string, execute: ToolSpec['execute'], over: Partial<ToolSpec> = {}): ToolSpec =>
  read(name, execute, { risk: 'irreversible_write', supportsIdempotency: false, maxAttempts: 1, ...over });

const text = (bytes: number) => ({ text: 'x'.repeat(bytes) });
const tools: ToolSpec[] = [
  read('cyclic_read', async () => cyclic()),
  write('cyclic_write', async () => cyclic()),
  read('bigint_read', async () => ({ amount: 10n })),
  read('doubling_read', async () => doubling()),
  read('sparse_read', async () => sparse()),
  read('throwing_getter_read', async () => ({
    get secret() {
      throw new Error('no');
    },
  })),
  // Ignores its abort signal and never answers.
  read('deaf_read', () => new Promise(() => undefined), { timeoutMs: DEAF_TIMEOUT_MS }),
  write('deaf_write', () => new Promise(() => undefined), { timeoutMs: DEAF_TIMEOUT_MS }),
  read('text_read', async (_ctx, input: { bytes: number }) => text(input.bytes), { maxResultBytes: 4 * MiB }),
  read('text_default_read', async (_ctx, input: { bytes: number }) => text(input.bytes)),
  // The largest record: the largest arguments the API accepts, answered by the largest result the runner records.
  write('echo_write', async (_ctx, input: { pad: string; bytes: number }) => ({ pad: input.pad, ...text(input.bytes) }), {
    maxResultBytes: 4 * MiB,
  }),
];

let stack: TestStack;
let runId: string;

beforeAll(async () => {
  stack = await startTestStack({ tools });
  runId = await stack.api.createRun(stack.keys.agent, { maxToolCalls: 1000, maxTurns: 1000 });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

let calls = 0;
async function call(name: string, args: Record<string, unknown> = {}) {
  const callId = `call_${name}_${++calls}`;
  const res = await stack.api.call(stack.keys.agent, runId, { callId, name, arguments: args });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  return res.body;
}

/** DynamoDB's item size: attribute names plus values, as its documentation counts them (an upper bound here). */
function itemBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return 21;
  if (value.B !== undefined) return value.B.length;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L) return 3 + value.L.reduce((n, v) => n + 1 + itemBytes(v), 0);
  if (value.M) return 3 + Object.entries(value.M).reduce((n, [k, v]) => n + Buffer.byteLength(k) + 1 + itemBytes(v), 0);
  if (value.SS) return value.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (value.NS) return value.NS.length * 21;
  return 0;
}
async function storedItemBytes(operationId: string): Promise<number> {
  const client = localClient(inject('dynamoEndpoint'));
  try {
    const out = await client.send(new GetItemCommand({ TableName: stack.tables!.operations, Key: { operationId: { S: operationId } } }));
    return itemBytes({ M: out.Item! });
  } finally {
    client.destroy();
  }
}

describe.skipIf(!isEmbedded)('tools that answer what cannot be recorded', () => {
  it('a cyclic, BigInt, exponentially shared, sparse or throwing output is invalid_output; the runner stays responsive', async () => {
    const started = Date.now();
    const health = (async () => {
      const latencies: number[] = [];
      while (Date.now() - started < 3_000) {
        const t = Date.now();
        const res = await fetch(`${stack.apiUrl}/v1/health`);
        expect(res.status).toBe(200);
        latencies.push(Date.now() - t);
      }
      return latencies;
    })();
    const reads = await Promise.all(
      ['cyclic_read', 'bigint_read', 'doubling_read', 'sparse_read', 'throwing_getter_read'].flatMap((name) => [call(name), call(name)]),
    );
    for (const envelope of reads) {
      expect(envelope).toMatchObject({ status: 'failed', code: 'invalid_output' });
      expect(envelope.message).toMatch(/cannot be recorded/);
    }
    expect(reads.map((e) => e.message).join('\n')).toMatch(/cycle/);
    expect(reads.map((e) => e.message).join('\n')).toMatch(/BigInt/);
    // A write that answered badly may have acted: unknown, but never "timeout_unknown".
    expect(await call('cyclic_write')).toMatchObject({ status: 'outcome_unknown', code: 'invalid_output' });
    // A frozen process never answers again; a busy 2-core machine may take seconds: the bound tells them apart.
    const latencies = await health;
    expect(Math.max(...latencies)).toBeLessThan(15_000);
  }, 60_000);

  // The tool never settles; before the runner enforced the timeout, such a call stayed `executing` for a minute
  // or more. The margin above timeoutMs leaves room for a busy machine, far below that.
  it('a tool that ignores its abort signal is settled at its timeoutMs, not when the tool gives up', async () => {
    for (const [name, status] of [
      ['deaf_read', 'failed'],
      ['deaf_write', 'outcome_unknown'],
    ] as const) {
      const envelope = await call(name);
      expect(envelope).toMatchObject({ status });
      const events = await stack.api.trace(stack.keys.agent, runId);
      const ours = events.filter((e) => e.operationId === envelope.logical_operation_id);
      const begun = ours.find((e) => e.type === 'attempt.started')!;
      const finished = ours.find((e) => e.type === 'attempt.finished')!;
      const took = Date.parse(finished.at) - Date.parse(begun.at);
      expect(took).toBeGreaterThanOrEqual(DEAF_TIMEOUT_MS - 50);
      expect(took).toBeLessThanOrEqual(DEAF_TIMEOUT_MS + 10_000);
    }
  }, 60_000);

  it('a 2 MB result is recorded and returned whole; the item holds a pointer to it', async () => {
    const envelope = await call('text_read', { bytes: 2_000_000 });
    expect(envelope.status, JSON.stringify(envelope).slice(0, 300)).toBe('succeeded');
    expect(envelope.result.text.length).toBe(2_000_000);
    expect(envelope).not.toHaveProperty('result_omitted');
    const op = await stack.api.operation(stack.keys.agent, envelope.logical_operation_id);
    expect(op.envelope.result.text.length).toBe(2_000_000);
    expect(await storedItemBytes(envelope.logical_operation_id)).toBeLessThan(16 * 1024);
  }, 60_000);

  it('above maxResultBytes (default 256 KiB) the envelope says result_omitted with its size and hash', async () => {
    const under = await call('text_default_read', { bytes: 200_000 });
    expect(under.result.text.length).toBe(200_000);
    const over = await call('text_default_read', { bytes: 300_000 });
    const json = JSON.stringify(text(300_000));
    expect(over).toMatchObject({
      status: 'succeeded',
      result_omitted: { bytes: Buffer.byteLength(json), sha256: `sha256:${createHash('sha256').update(json).digest('hex')}` },
    });
    expect(over).not.toHaveProperty('result');
    // Over 5 MiB nothing can be recorded: invalid_output.
    expect(await call('text_read', { bytes: RESULT_LIMITS.maxRecordedBytes })).toMatchObject({ status: 'failed', code: 'invalid_output' });
  }, 60_000);

  it('the largest record (largest arguments, largest result) stays under the 400 KB item limit', async () => {
    const pad = 'p'.repeat(JSON_BOUNDS.maxArgumentsBytes - 100);
    const bytes = RESULT_LIMITS.maxRecordedBytes - pad.length - 100;
    const envelope = await call('echo_write', { pad, bytes });
    expect(envelope.status).toBe('succeeded');
    expect(envelope).toHaveProperty('result_omitted');
    expect(envelope.result_omitted.bytes).toBeGreaterThan(5 * 1024 * 1024 - 200);
    const size = await storedItemBytes(envelope.logical_operation_id);
    expect(size).toBeLessThan(64 * 1024);
    const op = await stack.api.operation(stack.keys.reviewer, envelope.logical_operation_id);
    expect(op.state).toBe('reported');
  }, 60_000);
});
