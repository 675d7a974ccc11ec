import { chmodSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { createSandbox } from '../sandbox/server';
import { startDynamoLocal } from './dynamodb-local';
import { startS3Local } from './s3-local';

/** Parts started so far, stopped in reverse order on shutdown or when a later part fails to start. */
export type Started = (() => Promise<void>)[];

/** Each line with the seconds since the stack began to start, e.g. `[ 2.4s] tables ready`. */
export function progressReporter(onProgress: ((line: string) => void) | undefined): (line: string) => void {
  const began = Date.now();
  return (line) => onProgress?.(`[${((Date.now() - began) / 1000).toFixed(1).padStart(4)}s] ${line}`);
}

export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((r) => {
    server.close(() => r());
    server.closeAllConnections();
  });
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolvePort((server.address() as AddressInfo).port));
  });
}

/**
 * The data directory, made if missing, readable by its owner only (0700): it holds the record, the
 * sandbox's ledger and the blob store. Every part that writes under it makes it through here.
 */
export function ensureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode as it was: one made by an older version stays readable by others.
  chmodSync(dataDir, 0o700);
}

/** The sandbox (the demo tools' upstreams) on its port, its state in the data directory. */
export async function startSandboxPart(dataDir: string, port: number, started: Started, progress: (line: string) => void): Promise<string> {
  ensureDataDir(dataDir);
  const sandbox = createSandbox(dataDir);
  const sandboxPort = await listen(sandbox, port);
  started.push(() => closeServer(sandbox));
  const url = `http://127.0.0.1:${sandboxPort}`;
  progress(`sandbox listening on ${url}`);
  return url;
}

/** The DynamoDB endpoint: the one given, or a DynamoDB Local started with its files in the data directory. */
export async function dynamoPart(
  options: { dataDir: string; dynamoEndpoint?: string },
  started: Started,
  progress: (line: string) => void,
): Promise<string> {
  if (options.dynamoEndpoint) return options.dynamoEndpoint;
  progress('starting DynamoDB Local (Java; the first start takes a few seconds)…');
  const dynamo = await startDynamoLocal(join(options.dataDir, 'dynamodb'));
  started.push(() => dynamo.stop());
  return dynamo.endpoint;
}

/** The blob store: s3rver with its objects under the data directory, serving `buckets`. */
export async function blobPart(
  dataDir: string,
  buckets: string | string[],
  started: Started,
  progress: (line: string) => void,
): Promise<string> {
  const s3 = await startS3Local(join(dataDir, 'blobs'), buckets);
  started.push(() => s3.stop());
  progress(`blob store (s3rver) on ${s3.endpoint}, bucket ${[buckets].flat().join(', ')}`);
  return s3.endpoint;
}

/** The API's HTTP server on 127.0.0.1 (port 0: any free one); resolves with the port it got. */
export async function serveApiPart(
  fetch: (request: Request) => Response | Promise<Response>,
  port: number,
  started: Started,
): Promise<number> {
  const api = serve({ fetch, port, hostname: '127.0.0.1' }) as Server;
  const apiPort = await new Promise<number>((r, reject) => {
    api.once('error', reject);
    api.once('listening', () => r((api.address() as AddressInfo).port));
  });
  started.push(() => closeServer(api));
  return apiPort;
}

/** Runs `sweep` every `intervalMs`, never two at once; a failed sweep is logged and the next one runs as planned. */
export function sweeperPart(sweep: () => Promise<unknown>, intervalMs: number, started: Started): void {
  let sweeping = false;
  const timer = setInterval(async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      await sweep();
    } catch (error) {
      console.error(`sweeper: ${(error as Error).message}`);
    } finally {
      sweeping = false;
    }
  }, intervalMs);
  timer.unref();
  started.push(async () => clearInterval(timer));
}
