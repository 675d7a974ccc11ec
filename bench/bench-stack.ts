import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClient, startDynamoLocal } from '../local/dynamodb-local';
import { startStack, type StackOptions } from '../local/stack';

/**
 * The embedded stack the measurements run on: its own DynamoDB Local, the given principals, and one
 * DynamoDB client the caller can instrument before the stack starts. `stop` removes everything.
 */
export async function startBenchStack(options: {
  name: string;
  principals: { id: string; key: string; roles: string[]; tools: string[] | '*' }[];
  instrument?: (client: DynamoDBClient) => void;
  stack?: Partial<StackOptions>;
  /** More settings of the config document (model prices, spend limits). */
  config?: Record<string, unknown>;
}) {
  const dynamoLocal = await startDynamoLocal();
  const dynamo = localClient(dynamoLocal.endpoint);
  options.instrument?.(dynamo);
  const dir = mkdtempSync(join(tmpdir(), `toolrunner-${options.name}-`));
  const configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({ principals: options.principals, approvalSecret: `${options.name}-secret-0123456789abcdef`, ...options.config }),
  );
  const stack = await startStack({
    dataDir: dir,
    configPath,
    dynamoEndpoint: dynamoLocal.endpoint,
    dynamoClient: dynamo,
    tablePrefix: options.name,
    ...options.stack,
  });
  return {
    stack,
    dynamoEndpoint: dynamoLocal.endpoint,
    dynamoPid: dynamoLocal.pid,
    async stop() {
      await stack.stop();
      await dynamoLocal.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs a measurement as a script: any failure is printed and the process exits 1. */
export function runMain(main: () => Promise<void>): void {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
