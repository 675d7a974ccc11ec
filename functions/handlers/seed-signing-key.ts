import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { z } from 'zod';
import { defaultLog } from '../core/log';

const Properties = z.object({ ConfigSecretArn: z.string().min(1), SigningKeyArn: z.string().min(1) });
const WithKey = z.object({ approvalSecret: z.string().min(16) });

/** The `approvalSecret` of a principals document's text, if it holds one the runner accepts. */
function keyOf(text: string | undefined): string | undefined {
  try {
    const parsed = WithKey.safeParse(JSON.parse(text ?? ''));
    return parsed.success ? parsed.data.approvalSecret : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The key the links in flight were signed with: the document's current `approvalSecret`, or, when the deploy
 * that creates the signing key has just rewritten the document without one (the construct writes the
 * principals it owns whole), the previous version's. Secrets Manager keeps it under `AWSPREVIOUS` when a new
 * value is stored (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_UpdateSecret.html).
 * None (a new stack whose document never held one): the generated key stays.
 */
export function seedOf(current: string | undefined, previous: string | undefined): string | undefined {
  return keyOf(current) ?? keyOf(previous);
}

async function valueAt(client: SecretsManagerClient, secretId: string, stage: 'AWSCURRENT' | 'AWSPREVIOUS') {
  try {
    return (await client.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: stage }))).SecretString;
  } catch (error) {
    // No version has that label: the document was never rewritten.
    if ((error as Error).name === 'ResourceNotFoundException') return undefined;
    throw error;
  }
}

/** Copies the old `approvalSecret` into the signing key, once: on the custom resource's Create only. */
async function seed(client: SecretsManagerClient, event: CloudFormationCustomResourceEvent): Promise<boolean> {
  if (event.RequestType !== 'Create') return false;
  const { ConfigSecretArn, SigningKeyArn } = Properties.parse(event.ResourceProperties);
  const key = seedOf(await valueAt(client, ConfigSecretArn, 'AWSCURRENT'), await valueAt(client, ConfigSecretArn, 'AWSPREVIOUS'));
  if (!key) return false;
  // The request id as the version token: a repeated delivery of this Create stores nothing new.
  await client.send(
    new PutSecretValueCommand({
      SecretId: SigningKeyArn,
      SecretString: JSON.stringify({ approvalSecret: key }),
      ClientRequestToken: event.RequestId,
    }),
  );
  return true;
}

/**
 * The signing key seed's custom resource (infra/signing-key.ts). It answers CloudFormation itself at the
 * pre-signed `ResponseURL`. A failed copy fails the deploy (it rolls back) rather than leaving a key that no
 * link in flight was signed with; Update and Delete change nothing.
 */
export function makeSeedHandler(client: () => SecretsManagerClient = () => new SecretsManagerClient({})) {
  return async (event: CloudFormationCustomResourceEvent): Promise<void> => {
    let status: 'SUCCESS' | 'FAILED' = 'SUCCESS';
    let reason: string | undefined;
    let seeded = false;
    try {
      seeded = await seed(client(), event);
    } catch (error) {
      status = event.RequestType === 'Delete' ? 'SUCCESS' : 'FAILED';
      reason = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 512);
      defaultLog().error('signing key seed failed', { reason });
    }
    if (event.RequestType === 'Create') defaultLog().info('signing key seed', { seeded });
    const physicalId = event.RequestType === 'Create' ? `${event.LogicalResourceId}-seed` : event.PhysicalResourceId;
    const response = await fetch(event.ResponseURL, {
      method: 'PUT',
      // The pre-signed URL was signed without a content type.
      headers: { 'content-type': '' },
      body: JSON.stringify({
        Status: status,
        Reason: reason ?? `seeded: ${seeded}`,
        PhysicalResourceId: physicalId,
        StackId: event.StackId,
        RequestId: event.RequestId,
        LogicalResourceId: event.LogicalResourceId,
        Data: { Seeded: String(seeded) },
      }),
    });
    if (!response.ok) throw new Error(`CloudFormation response: HTTP ${response.status}`);
  };
}

export const handler = makeSeedHandler();
