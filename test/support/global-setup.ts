import type { TestProject } from 'vitest/node';
import '../../local/env-defaults';
import { startDynamoLocal, type DynamoLocal } from '../../local/dynamodb-local';
import { isEmbedded } from './target';

let dynamo: DynamoLocal | undefined;

/** One DynamoDB Local (in memory) for the whole run; every test file makes its own tables in it. */
export async function setup(project: TestProject): Promise<void> {
  if (!isEmbedded) return;
  dynamo = await startDynamoLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
