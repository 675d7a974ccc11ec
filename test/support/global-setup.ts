import type { TestProject } from 'vitest/node';
import '../../local/env-defaults';
import { startDynamoLocal, type DynamoLocal } from '../../local/dynamodb-local';
import { FUNCTION_NAMES } from '../../infra/functions';
import { lambdaBundle } from '../../local/bundles';
import { ensureAssembly } from '../../local/template/assembly';
import { handlerMode, isEmbedded } from './target';

let dynamo: DynamoLocal | undefined;

/** One DynamoDB Local (in memory) for the whole run; every test file makes its own tables in it. */
export async function setup(project: TestProject): Promise<void> {
  if (!isEmbedded) return;
  // Built once here, so the test workers find them current instead of each building them at once.
  if (handlerMode === 'bundled') for (const name of FUNCTION_NAMES) await lambdaBundle(name);
  // Synthesized once here (tens of seconds) when cdk.out is stale; every stack of the run reuses it.
  if (handlerMode === 'template') {
    const { synthesizedMs } = await ensureAssembly();
    if (synthesizedMs) console.log(`template: synthesized the CDK app in ${(synthesizedMs / 1000).toFixed(1)} s`);
  }
  // The dynamodb and newest-sdks projects share this setup (and so one DynamoDB Local).
  dynamo ??= await startDynamoLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
  dynamo = undefined;
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
