import { readFile, stat } from 'node:fs/promises';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { randomBytes } from 'node:crypto';
import { RunnerConfigSchema, type RunnerConfig } from '../core/config';

export type ResolvedConfig = RunnerConfig & { approvalSecret: string };
export type ConfigSource = () => Promise<ResolvedConfig>;

/** Without a configured secret, links are signed with a per-process one (they die with the process). */
const processSecret = randomBytes(32).toString('base64url');

function resolve(raw: unknown, origin: string): ResolvedConfig {
  const parsed = RunnerConfigSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${origin}: invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { ...parsed.data, approvalSecret: parsed.data.approvalSecret ?? processSecret };
}

/**
 * The local principals file, re-read whenever its modification time changes, so that a revoked
 * permission applies to the very next check (authorization runs again before every attempt).
 */
export function fileConfigSource(path: string): ConfigSource {
  let cached: { mtimeMs: number; size: number; config: ResolvedConfig } | undefined;
  return async () => {
    const info = await stat(path);
    if (!cached || cached.mtimeMs !== info.mtimeMs || cached.size !== info.size) {
      cached = { mtimeMs: info.mtimeMs, size: info.size, config: resolve(JSON.parse(await readFile(path, 'utf8')), path) };
    }
    return cached.config;
  };
}

/** On AWS: the same document in a Secrets Manager secret, cached briefly so revocations apply within a minute. */
export function secretConfigSource(client: SecretsManagerClient, secretId: string, maxAgeMs = 30_000): ConfigSource {
  let cached: { at: number; config: ResolvedConfig } | undefined;
  return async () => {
    if (!cached || Date.now() - cached.at > maxAgeMs) {
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      cached = { at: Date.now(), config: resolve(JSON.parse(out.SecretString ?? '{}'), secretId) };
    }
    return cached.config;
  };
}
