import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { startStack } from '../../local/stack';
import { npmStart } from '../support/npm-start';
import { handlerMode, isEmbedded } from '../support/target';

/** What npm itself takes to start and exit around the runner's own 5 s (loaded 2-core machines included). */
const npmOverheadMs = 10_000;

const parent = mkdtempSync(join(tmpdir(), 'toolrunner-datadir-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe.runIf(isEmbedded)('the data directory', () => {
  it('is created readable by its owner only (0700), with the blob store inside', async () => {
    const dataDir = join(parent, 'nested', 'data');
    const stack = await startStack({
      dataDir,
      configPath: join(parent, 'config.json'),
      dynamoEndpoint: inject('dynamoEndpoint'),
      tablePrefix: `d${Date.now().toString(36)}`,
      port: 0,
      sandboxPort: 0,
    });
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(dataDir, 'blobs')).mode & 0o777).toBe(0o700);
    } finally {
      await stack.stop();
    }
  }, 120_000);

  it("holds PORT before any part takes a port of the OS's choosing; a request sent meanwhile is answered once the stack is up", async () => {
    // A PORT in the ephemeral range (as freePort gives) could otherwise be handed to the blob store or the engine.
    const port = await freePort();
    let early: Promise<number> | undefined;
    const stack = await startStack({
      dataDir: join(parent, 'early'),
      configPath: join(parent, 'early-config.json'),
      dynamoEndpoint: inject('dynamoEndpoint'),
      tablePrefix: `e${Date.now().toString(36)}`,
      port,
      sandboxPort: 0,
      onProgress: (line) => {
        if (!early && line.includes('blob store')) early = fetch(`http://127.0.0.1:${port}/v1/health`).then((r) => r.status);
      },
    });
    try {
      expect(early).toBeDefined();
      expect(await early).toBe(200);
      expect(stack.apiUrl).toBe(`http://127.0.0.1:${port}`);
    } finally {
      await stack.stop();
    }
  }, 120_000);
});

/** `npm start` that is expected to exit before it is ready: its exit code, output and how long it took. */
function startExpectingExit(env: Record<string, string>): Promise<{ code: number | null; output: string; ms: number }> {
  const began = Date.now();
  return new Promise((done) => {
    const child = spawn('npm', ['start'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => done({ code, output, ms: Date.now() - began }));
  });
}

// These start `npm start` itself, as a user does; the template target builds a different stack.
describe.runIf(handlerMode === 'source')('a data directory in use', () => {
  it('refuses a second start while the first lives, naming the directory and its process, and leaves the first serving', async () => {
    const dataDir = join(parent, 'owned');
    const configPath = join(parent, 'owned-config.json');
    const first = await npmStart({
      TOOLRUNNER_DATA_DIR: dataDir,
      TOOLRUNNER_CONFIG: configPath,
      PORT: String(await freePort()),
      SANDBOX_PORT: String(await freePort()),
    });
    try {
      const owner = JSON.parse(readFileSync(join(dataDir, 'owner.json'), 'utf8')) as { pid: number };
      const second = await startExpectingExit({
        TOOLRUNNER_DATA_DIR: dataDir,
        TOOLRUNNER_CONFIG: configPath,
        PORT: String(await freePort()),
        SANDBOX_PORT: String(await freePort()),
      });
      expect(second.code).toBe(1);
      expect(second.output).toContain(`the data directory ${dataDir} is in use by process ${owner.pid}`);
      expect(second.output).not.toContain('ready:');
      expect(second.ms).toBeLessThan(5_000 + npmOverheadMs);
      // The first still answers, its DynamoDB Local untouched: a call that writes goes through.
      const api = first.output().match(/ready: api=(\S+)/)![1];
      expect((await fetch(`${api}/v1/health`)).status).toBe(200);
      const { principals } = JSON.parse(readFileSync(configPath, 'utf8')) as { principals: { key: string; roles: string[] }[] };
      const agent = principals.find((p) => p.roles.includes('agent'))!;
      const run = await fetch(`${api}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${agent.key}` } });
      expect(run.status).toBe(201);
      expect(first.alive()).toBe(true);
    } finally {
      await first.signalGroup('SIGTERM');
    }
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
  }, 180_000);

  it('takes over a directory whose recorded owner is gone, and makes an existing directory private', async () => {
    const dataDir = join(parent, 'orphaned');
    mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(
      join(dataDir, 'owner.json'),
      JSON.stringify({ pid: Number(gone.stdout), command: 'node local/main.ts', startedAt: '2026-01-01T00:00:00.000Z' }),
    );
    const started = await npmStart({
      TOOLRUNNER_DATA_DIR: dataDir,
      TOOLRUNNER_CONFIG: join(parent, 'orphaned-config.json'),
      PORT: String(await freePort()),
      SANDBOX_PORT: String(await freePort()),
    });
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      const owner = JSON.parse(readFileSync(join(dataDir, 'owner.json'), 'utf8')) as { pid: number };
      expect(owner.pid).not.toBe(Number(gone.stdout));
      // Arguments over 64 KiB go to the blob store: its files are the owner's alone too.
      const api = started.output().match(/ready: api=(\S+)/)![1];
      const { principals } = JSON.parse(readFileSync(join(parent, 'orphaned-config.json'), 'utf8')) as {
        principals: { key: string; roles: string[] }[];
      };
      const headers = {
        authorization: `Bearer ${principals.find((p) => p.roles.includes('agent'))!.key}`,
        'content-type': 'application/json',
      };
      const run = (await (await fetch(`${api}/v1/runs`, { method: 'POST', headers, body: '{}' })).json()) as { runId: string };
      const call = { callId: 'call_big', turn: 1, name: 'no_such_tool', arguments: { text: 'x'.repeat(70_000) } };
      expect((await fetch(`${api}/v1/runs/${run.runId}/tool-calls`, { method: 'POST', headers, body: JSON.stringify(call) })).status).toBe(
        200,
      );
      const files = readdirSync(join(dataDir, 'blobs'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) expect(statSync(join(f.parentPath, f.name)).mode & 0o077, f.name).toBe(0);
    } finally {
      await started.signalGroup('SIGTERM');
    }
  }, 180_000);

  it('names a port in use before anything else starts', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const { port } = holder.address() as AddressInfo;
    const dataDir = join(parent, 'port-busy');
    try {
      const res = await startExpectingExit({
        TOOLRUNNER_DATA_DIR: dataDir,
        TOOLRUNNER_CONFIG: join(parent, 'port-config.json'),
        PORT: String(port),
      });
      expect(res.code).toBe(1);
      expect(res.output).toContain(`port ${port} (PORT) is in use`);
      // Nothing started: no data directory, no DynamoDB Local.
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      holder.close();
    }
  }, 60_000);
});
