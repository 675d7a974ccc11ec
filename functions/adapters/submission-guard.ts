import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyAlreadyInProgressError, IdempotencyConfig, IdempotencyValidationError, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';

export interface SubmissionKey {
  runId: string;
  callId: string;
  inputHash: string;
}

export type Guarded<T> = { kind: 'done'; value: T; replayed: boolean } | { kind: 'payload_mismatch' };

/** Runs a submission at most once per (runId, callId) while its record lives, and says whether this was a replay. */
export type SubmissionGuard = <T>(key: SubmissionKey, submit: () => Promise<T>) => Promise<Guarded<T>>;

const IN_PROGRESS_SECONDS = 30;

/**
 * Powertools idempotency in front of tool-call submission: keyed on [runId, callId], with payload validation
 * on the frozen-arguments hash. A replay is answered from the idempotency table without touching the
 * lifecycle, and a changed payload is refused. It is a fast path, not the guarantee: the operation id is
 * derived from (runId, callId) and created by conditional put, so even an expired in-progress marker can
 * only lead back to the same operation, never to a second execution.
 */
export function powertoolsSubmissionGuard(client: DynamoDBClient, tableName: string): SubmissionGuard {
  const config = new IdempotencyConfig({ eventKeyJmesPath: '[runId, callId]', payloadValidationJmesPath: 'inputHash', expiresAfterSeconds: 24 * 3600, throwOnNoIdempotencyKey: true });
  // A short in-progress lease: a submitter that died frees the key quickly (see above for why that is safe).
  config.registerLambdaContext({ getRemainingTimeInMillis: () => IN_PROGRESS_SECONDS * 1000 } as Context);
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: client });
  const once = makeIdempotent(async (event: SubmissionKey & { nonce: string; submit: () => Promise<unknown> }) => ({ nonce: event.nonce, value: await event.submit() }), { persistenceStore, config });

  return async <T>(key: SubmissionKey, submit: () => Promise<T>): Promise<Guarded<T>> => {
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
