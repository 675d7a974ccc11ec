import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';

import type { Guarded, OnceGuard, OnceKey } from '../core/ports';

const IN_PROGRESS_SECONDS = 30;

/**
 * Powertools idempotency for requests that have no natural key of their own: `POST /v1/runs` with an
 * `Idempotency-Key` header. Keyed on [scope, key] with payload validation on the body's hash, so a client
 * retrying after a timeout gets the same run, and a reused key with another body is refused. Tool calls do
 * not need it: their operation id is derived from (runId, callId) and created by a conditional write.
 */
export function powertoolsOnceGuard(client: DynamoDBClient, tableName: string): OnceGuard {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[scope, key]',
    payloadValidationJmesPath: 'payloadHash',
    expiresAfterSeconds: 24 * 3600,
    throwOnNoIdempotencyKey: true,
  });
  // A short in-progress lease: a submitter that died frees the key quickly (see above for why that is safe).
  config.registerLambdaContext({ getRemainingTimeInMillis: () => IN_PROGRESS_SECONDS * 1000 } as Context);
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: client });
  const once = makeIdempotent(
    async (event: OnceKey & { nonce: string; submit: () => Promise<unknown> }) => ({ nonce: event.nonce, value: await event.submit() }),
    { persistenceStore, config },
  );

  return async <T>(key: OnceKey, submit: () => Promise<T>): Promise<Guarded<T>> => {
    const nonce = randomUUID();
    const deadline = Date.now() + IN_PROGRESS_SECONDS * 1000;
    for (;;) {
      try {
        const out = (await once({ ...key, nonce, submit })) as { nonce: string; value: T };
        return { kind: 'done', value: out.value, replayed: out.nonce !== nonce };
      } catch (error) {
        if (error instanceof IdempotencyValidationError) return { kind: 'payload_mismatch' };
        // A concurrent duplicate is being submitted right now: wait for its stored answer.
        if (error instanceof IdempotencyAlreadyInProgressError && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
          continue;
        }
        throw error;
      }
    }
  };
}
