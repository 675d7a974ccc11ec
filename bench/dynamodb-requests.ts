import {
  type AttributeValue,
  DescribeTableCommand,
  PutItemCommand,
  type PutItemCommandInput,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { createClient } from '../functions/client';
import { localClient } from '../local/dynamodb-local';
import { runMain, startBenchStack } from './bench-stack';
import { processCpuSeconds } from './process-cpu';

/**
 * `npm run bench:requests`: what each DynamoDB request of a `get_order` call costs DynamoDB Local in CPU.
 * On a small machine that CPU is what bounds `npm run bench`'s calls per second, and it differs a lot by
 * kind (a transaction costs several plain writes). The runner's own requests are recorded from real calls
 * on the embedded stack, as its client sends them; then each request of the call is sent again
 * `REPEATS` times, 16 at once, with its items under fresh keys (so every condition holds as it did), one
 * request of the call after the other, while DynamoDB Local's CPU time is read from /proc. Reported, never
 * asserted.
 */
const REPEATS = Number(process.env.BENCH_REQUEST_REPEATS ?? 1000);
const CONCURRENCY = 16;

interface Recorded {
  command: string;
  input: Record<string, unknown>;
}

async function main(): Promise<void> {
  let recording: Recorded[] | undefined;
  const agentKey = 'tr_requests_agent_key_0123456789ab';
  const bench = await startBenchStack({
    name: 'requests',
    principals: [{ id: 'agent', key: agentKey, roles: ['agent'], tools: '*' }],
    // After the document client's marshalling: the requests as DynamoDB receives them.
    instrument: (client) =>
      client.middlewareStack.add(
        (next, context) => async (args) => {
          recording?.push({ command: context.commandName as string, input: structuredClone(args.input as Record<string, unknown>) });
          return next(args);
        },
        { step: 'build', name: 'benchRecordRequests' },
      ),
  });
  const dynamo = localClient(bench.dynamoEndpoint);
  try {
    const agent = createClient({ baseUrl: bench.stack.apiUrl, apiKey: agentKey });
    const { runId } = await agent.createRun({ budgets: { maxToolCalls: 100_000, maxTurns: 10_000 } });
    let n = 0;
    const getOrder = async () => {
      const answer = await agent.callTool(runId, {
        callId: `call_r${n}`,
        turn: 1,
        name: 'get_order',
        arguments: { orderId: `ord_${1 + (n++ % 100)}` },
      });
      if (answer.kind !== 'envelope' || answer.envelope.status !== 'succeeded')
        throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
    };
    for (let i = 0; i < 50; i++) await getOrder();
    // The call's requests: the sequence most of 20 calls sent (a call may also meet the stack's background work).
    const sequences = new Map<string, Recorded[]>();
    const counts = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      recording = [];
      await getOrder();
      const signature = recording.map((r) => r.command).join(',');
      sequences.set(signature, recording);
      counts.set(signature, (counts.get(signature) ?? 0) + 1);
    }
    recording = undefined;
    const [signature] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
    const call = sequences.get(signature)!;

    const keys = new Map<string, string>();
    /** Each table's name in the stack's own terms (`events`, `watch`, …), for the report. */
    const tableIds = new Map(Object.entries(bench.stack.tables).map(([id, table]) => [table, id]));
    for (const table of tableIds.keys()) {
      const described = await dynamo.send(new DescribeTableCommand({ TableName: table }));
      keys.set(table, described.Table!.KeySchema!.find((k) => k.KeyType === 'HASH')!.AttributeName!);
    }
    /** The item under a key of its own: its partition key's string gets `suffix`. */
    const rekeyed = (table: string, item: Record<string, AttributeValue>, suffix: string) => {
      const key = keys.get(table)!;
      return { ...item, [key]: { S: `${item[key].S}${suffix}` } };
    };
    const resend = (r: Recorded, suffix: string) => {
      if (r.command === 'PutItemCommand') {
        const input = r.input as unknown as PutItemCommandInput;
        return dynamo.send(new PutItemCommand({ ...input, Item: rekeyed(input.TableName!, input.Item!, suffix) }));
      }
      if (r.command === 'TransactWriteItemsCommand') {
        const { ClientRequestToken: _token, ...input } = r.input as unknown as TransactWriteItemsCommandInput;
        const items = input.TransactItems!.map((t) =>
          t.Put ? { Put: { ...t.Put, Item: rekeyed(t.Put.TableName!, t.Put.Item!, suffix) } } : t,
        );
        return dynamo.send(new TransactWriteItemsCommand({ ...input, TransactItems: items }));
      }
      throw new Error(`no replay for ${r.command}`);
    };
    /** For comparison: a transaction's items sent one after the other as plain writes (not atomic). */
    const resendApart = async (r: Recorded, suffix: string) => {
      const { TransactItems } = r.input as unknown as TransactWriteItemsCommandInput;
      for (const t of TransactItems!) {
        if (t.Update) await dynamo.send(new UpdateItemCommand(t.Update));
        if (t.Put) await dynamo.send(new PutItemCommand({ ...t.Put, Item: rekeyed(t.Put.TableName!, t.Put.Item!, suffix) }));
      }
    };
    const describe = (r: Recorded) => {
      const input = r.input as { TableName?: string; ConditionExpression?: string; TransactItems?: { Put?: unknown; Update?: unknown }[] };
      if (input.TransactItems)
        return `${r.command.replace(/Command$/, '')} (${input.TransactItems.map((t) => (t.Put ? 'put' : 'update')).join(' + ')})`;
      return `${r.command.replace(/Command$/, '')} ${tableIds.get(input.TableName!)}${input.ConditionExpression ? ' (conditional)' : ''}`;
    };

    /** DynamoDB Local's CPU milliseconds per repeat of `send`, `CONCURRENCY` at once. */
    const measure = async (send: (suffix: string) => Promise<unknown>, round: string) => {
      let next = 0;
      const before = processCpuSeconds(bench.dynamoPid);
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < REPEATS) await send(`~${round}${next++}`);
        }),
      );
      return Math.round(((processCpuSeconds(bench.dynamoPid) - before) * 1e5) / REPEATS) / 100;
    };
    // Twice: the first round warms DynamoDB Local's JIT, the second is measured.
    const rows: Record<string, { cpuMs: number }> = {};
    let total = 0;
    for (const round of ['warm', 'measured']) {
      for (const [index, r] of call.entries()) {
        const ms = await measure((suffix) => resend(r, suffix), round);
        if (round !== 'measured') continue;
        rows[`${index + 1}. ${describe(r)}`] = { cpuMs: ms };
        total += ms;
      }
    }
    const transaction = call.find((r) => r.command === 'TransactWriteItemsCommand');
    if (transaction) {
      await measure((suffix) => resendApart(transaction, suffix), 'apart-warm');
      rows['for comparison: the transaction as plain writes'] = {
        cpuMs: await measure((suffix) => resendApart(transaction, suffix), 'apart'),
      };
    }
    console.table(rows);
    console.log(`DynamoDB Local's CPU per get_order call, request by request: ${total.toFixed(1)} ms (${call.length} requests)`);
  } finally {
    dynamo.destroy();
    await bench.stop();
  }
}

runMain(main);
