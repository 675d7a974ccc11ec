import { GetObjectCommand, NoSuchKey, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { BlobStore } from '../core/ports';

/**
 * The S3 client's options. Against a custom endpoint (s3rver locally, LocalStack) objects are addressed by
 * path (`<endpoint>/<bucket>/<key>`): a bucket subdomain of `127.0.0.1` resolves nowhere. Checksums only
 * where S3 requires them: s3rver does not read the SDK's default aws-chunked trailers, and S3 needs none for
 * these small JSON objects (TLS protects them in transit).
 */
export function s3ClientConfig(env: NodeJS.ProcessEnv = process.env): S3ClientConfig {
  const endpoint = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true' ? undefined : (env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL);
  return {
    // Read now, not on the first request: an embedded stack started later in the same process has its own.
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}

/** The blob store on S3 (s3rver locally): one bucket, JSON text objects. */
export function s3Blobs(client: S3Client, bucket: string): BlobStore {
  return {
    async put(key, text) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: text, ContentType: 'application/json' }));
    },
    async get(key) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return await out.Body?.transformToString('utf8');
      } catch (error) {
        if (error instanceof NoSuchKey || (error as Error).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
  };
}

export { S3Client };
