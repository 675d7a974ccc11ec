import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import S3rver from 's3rver';

/**
 * s3rver knows one access key (`S3RVER`) and refuses any other before it looks at the request, though it
 * never verifies a SigV4 signature. Locally each process signs with its own key (the embedded stack's, or a
 * template function's per-role key), so every key is taken as its one account's.
 */
let acceptingAnyKey = false;
function acceptAnyAccessKey(): void {
  if (acceptingAnyKey) return;
  acceptingAnyKey = true;
  const Account = createRequire(import.meta.url)('s3rver/lib/models/account.js') as {
    registry: Map<string, unknown>;
    DUMMY_ACCOUNT: unknown;
  };
  const known = Account.registry.get.bind(Account.registry);
  Account.registry.get = (id: string) => known(id) ?? Account.DUMMY_ACCOUNT;
}

export interface S3Local {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * s3rver with its objects in `directory` (kept across restarts, like DynamoDB Local's files) and `bucket`
 * made if missing. The handlers reach it through the real `@aws-sdk/client-s3` (`AWS_ENDPOINT_URL_S3`).
 */
export async function startS3Local(directory: string, buckets: string | string[]): Promise<S3Local> {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  acceptAnyAccessKey();
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory,
    silent: true,
    resetOnClose: false,
    configureBuckets: [buckets].flat().map((name) => ({ name, configs: [] })),
  });
  const { port } = await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => server.close() };
}

/** A bucket name S3 accepts (3–63 lowercase letters, digits and hyphens) from a table prefix. */
export function bucketNameFor(prefix: string): string {
  const name = `${prefix.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-blobs`.replace(/^-+/, '');
  return name.slice(0, 63).replace(/-+$/, '');
}
