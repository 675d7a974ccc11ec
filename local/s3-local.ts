import { mkdirSync } from 'node:fs';
import S3rver from 's3rver';

export interface S3Local {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * s3rver with its objects in `directory` (kept across restarts, like DynamoDB Local's files) and `bucket`
 * made if missing. The handlers reach it through the real `@aws-sdk/client-s3` (`AWS_ENDPOINT_URL_S3`).
 */
export async function startS3Local(directory: string, bucket: string): Promise<S3Local> {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory,
    silent: true,
    resetOnClose: false,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => server.close() };
}

/** A bucket name S3 accepts (3–63 lowercase letters, digits and hyphens) from a table prefix. */
export function bucketNameFor(prefix: string): string {
  const name = `${prefix.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-blobs`.replace(/^-+/, '');
  return name.slice(0, 63).replace(/-+$/, '');
}
