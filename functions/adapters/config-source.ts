import { readFileSync, statSync } from 'node:fs';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { RunnerConfigSchema, type RunnerConfig } from '../core/config';
import { defaultLog, jsonLines } from '../core/log';

export type ResolvedConfig = RunnerConfig & { approvalSecret: string };
export type ConfigSource = () => Promise<ResolvedConfig>;

/** Locally, without a configured secret, links are signed with a per-process one (they die with the process). */
const processSecret = randomBytes(32).toString('base64url');

/**
 * The construct's `oauth` prop reaches the functions as `TOOLRUNNER_OAUTH` (JSON) and wins over the
 * document's `oauth`, so an issuer set in code cannot be undone by editing the secret.
 */
function oauthOverride(): unknown {
  const text = process.env.TOOLRUNNER_OAUTH;
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error('TOOLRUNNER_OAUTH: not valid JSON', { cause: error });
  }
}

/**
 * The construct's `approvalTtlSeconds` prop reaches the functions as `TOOLRUNNER_APPROVAL_TTL_SECONDS` and wins
 * over the document's: a document the operator owns is never written by a deploy, so the prop cannot live in it.
 */
function overrides(): Record<string, unknown> {
  const oauth = oauthOverride();
  const ttl = process.env.TOOLRUNNER_APPROVAL_TTL_SECONDS;
  return { ...(oauth ? { oauth } : {}), ...(ttl ? { approvalTtlSeconds: Number(ttl) } : {}) };
}

function resolve(raw: unknown, origin: string, secret: 'required' | 'per-process', signingKey?: string): ResolvedConfig {
  const parsed = RunnerConfigSchema.safeParse(raw && typeof raw === 'object' ? { ...raw, ...overrides() } : raw);
  if (!parsed.success)
    throw new Error(`${origin}: invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  if (signingKey) return { ...parsed.data, approvalSecret: signingKey };
  if (parsed.data.approvalSecret) return { ...parsed.data, approvalSecret: parsed.data.approvalSecret };
  // Every Lambda container must sign and verify approval links, MCP sessions and console cookies with the same
  // key: a per-container one would make each of them fail on the next container, so refuse rather than drift.
  if (secret === 'required')
    throw new Error(`${origin}: invalid configuration: approvalSecret is required (at least 16 characters, the same for every function)`);
  return { ...parsed.data, approvalSecret: processSecret };
}

/** What went wrong with a configuration document, without echoing any of it (it holds keys). */
function describeProblem(text: string): string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'not valid JSON (perhaps caught mid-write)';
  }
  const parsed = RunnerConfigSchema.safeParse(raw);
  // Paths only, and the names of unknown top-level keys (names of settings, never their values).
  return parsed.success
    ? 'valid'
    : `invalid at ${parsed.error.issues
        .map((i) =>
          i.code === 'unrecognized_keys'
            ? `(root): unknown keys ${i.keys.map((k) => JSON.stringify(k.slice(0, 64))).join(', ')}`
            : i.path.join('.') || '(root)',
        )
        .slice(0, 5)
        .join(', ')}`;
}

/**
 * The local principals file, re-read whenever its modification time changes, so that a revoked
 * permission applies to the very next check (authorization runs again before every attempt).
 * A file caught mid-write or edited into an invalid state does not take the API down: the last valid
 * configuration keeps serving, and the problem is logged once per bad version of the file, not per request.
 * Only the very first read has nothing to fall back on, and throws.
 */
export function fileConfigSource(path: string, log?: (line: string) => void): ConfigSource {
  let version: string | undefined;
  let valid: ResolvedConfig | undefined;
  return async () => {
    let current: string;
    let text: string | undefined;
    try {
      // Synchronous: one stat of a small local file on every check costs a tenth of the CPU of the promise
      // form (measured 4 µs against 40), and the check runs several times a call.
      const info = statSync(path);
      current = `${info.mtimeMs}:${info.size}`;
      if (current === version && valid) return valid;
      text = readFileSync(path, 'utf8');
    } catch (error) {
      current = `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
    }
    if (current === version) {
      if (valid) return valid;
      throw new Error(`${path}: no valid configuration yet`);
    }
    version = current;
    const problem = text === undefined ? 'unreadable' : describeProblem(text);
    if (problem === 'valid') {
      valid = resolve(JSON.parse(text!), path, 'per-process');
      return valid;
    }
    if (!valid) throw new Error(`${path}: ${problem}`);
    (log ? jsonLines(log) : defaultLog()).warn('configuration file is unusable; the last valid configuration keeps serving', {
      path,
      problem,
    });
    return valid;
  };
}

const SigningKeySchema = z.object({ approvalSecret: z.string().min(16) });

/**
 * On AWS: the same document in a Secrets Manager secret, cached briefly so revocations apply within a minute.
 * With `signingKeyId` (the construct's own document) the key that signs links and sessions is that secret's
 * `approvalSecret`, and the document's is not read; without (a document the user brings) the document's
 * `approvalSecret` is required.
 */
export function secretConfigSource(client: SecretsManagerClient, secretId: string, maxAgeMs = 30_000, signingKeyId?: string): ConfigSource {
  let cached: { at: number; config: ResolvedConfig } | undefined;
  const read = async (id: string) => JSON.parse((await client.send(new GetSecretValueCommand({ SecretId: id }))).SecretString ?? '{}');
  return async () => {
    if (!cached || Date.now() - cached.at > maxAgeMs) {
      const [document, key] = await Promise.all([read(secretId), signingKeyId ? read(signingKeyId) : undefined]);
      let approvalSecret: string | undefined;
      if (signingKeyId) {
        const parsed = SigningKeySchema.safeParse(key);
        if (!parsed.success) throw new Error(`${signingKeyId}: the signing key holds no approvalSecret of at least 16 characters`);
        approvalSecret = parsed.data.approvalSecret;
      }
      cached = { at: Date.now(), config: resolve(document, secretId, 'required', approvalSecret) };
    }
    return cached.config;
  };
}
