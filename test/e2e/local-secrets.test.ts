import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { npmStart, type NpmStarted } from '../support/npm-start';
import { isEmbedded } from '../support/target';

const dataDir = mkdtempSync(join(tmpdir(), 'toolrunner-secrets-'));
const configPath = join(dataDir, 'config', 'toolrunner.local.json');
let started: NpmStarted | undefined;

const start = async () => {
  const [api, sandbox] = [await freePort(), await freePort()];
  started = await npmStart({
    PORT: String(api),
    SANDBOX_PORT: String(sandbox),
    TOOLRUNNER_DATA_DIR: dataDir,
    TOOLRUNNER_CONFIG: configPath,
  });
  return started.output;
};

afterAll(async () => {
  if (started?.alive()) await started.signalGroup('SIGKILL').catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

/** Listening TCP sockets of one process, as `address:port` in the kernel's hex notation, from /proc. */
function listeningSockets(pid: number): { address: string; port: number }[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
      if (match) inodes.add(match[1]);
    } catch {
      // The descriptor closed meanwhile.
    }
  }
  const found: { address: string; port: number }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9])) continue;
      const [address, port] = cols[1].split(':');
      found.push({ address, port: parseInt(port, 16) });
    }
  }
  return found;
}

const LOOPBACK = new Set(['0100007F', '0000000000000000FFFF00000100007F', '00000000000000000000000001000000']);

describe.runIf(isEmbedded)('the local stack keeps its secrets', () => {
  it('prints keys only when it creates the config file; DynamoDB Local listens on loopback only, owner-only files, no CORS *', async () => {
    const first = await start();
    const keys = (JSON.parse(readFileSync(configPath, 'utf8')) as { principals: { key: string }[] }).principals.map((p) => p.key);
    expect(first()).toContain('created with random keys');
    for (const key of keys) expect(first()).toContain(key);
    expect(await started!.signalGroup('SIGTERM')).toBe(0);

    const second = await start();
    expect(second()).toContain(`keys: ${configPath} (not printed`);
    for (const key of keys) expect(second()).not.toContain(key);

    const dynamoDir = join(dataDir, 'dynamodb');
    const pid = Number(readFileSync(join(dynamoDir, 'dynamodb-local.pid'), 'utf8'));
    const sockets = listeningSockets(pid);
    expect(sockets.length).toBeGreaterThan(0);
    for (const socket of sockets) expect(LOOPBACK.has(socket.address), `DynamoDB Local listens on ${socket.address}`).toBe(true);

    expect(statSync(dynamoDir).mode & 0o777).toBe(0o700);
    const files = readdirSync(dynamoDir);
    expect(files.some((f) => f.endsWith('.db'))).toBe(true);
    for (const f of files) expect(statSync(join(dynamoDir, f)).mode & 0o777, f).toBe(0o600);

    const preflight = await fetch(`http://127.0.0.1:${sockets[0].port}/`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).not.toBe('*');
    expect(preflight.headers.get('access-control-allow-origin')).not.toBe('http://evil.example');
    expect(await started!.signalGroup('SIGTERM')).toBe(0);
  }, 240_000);
});
