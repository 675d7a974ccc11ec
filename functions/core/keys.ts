import { hkdfSync } from 'node:crypto';

/**
 * What a derived key is for. Each purpose gets its own key, derived from the configuration's one secret
 * (`approvalSecret`), so every process of a deployment derives the same keys and a signature made for one
 * purpose never verifies for another (a session id is not an approval link, a link is not a cookie).
 * The label is the HKDF `info`: changing one retires every token issued under it.
 */
export const KeyPurpose = {
  /** Approval links, signed per approver (core/approval-link.ts). */
  approvalLinks: 'toolrunner/approval-links/v1',
  /** `Mcp-Session-Id` values, signed references to a session's run and principal (mcp/session-id.ts). */
  mcpSessions: 'toolrunner/mcp-sessions/v1',
  /** The console's session cookies. */
  consoleSessions: 'toolrunner/console-sessions/v1',
} as const;

export type KeyPurpose = (typeof KeyPurpose)[keyof typeof KeyPurpose];

const SALT = 'toolrunner key derivation';
const KEY_BYTES = 32;

/** The key for one purpose: HKDF-SHA256 over the configuration's secret, 32 bytes. */
export function deriveKey(secret: string, purpose: KeyPurpose): Buffer {
  if (secret.length === 0) throw new Error('the configuration secret is empty');
  return Buffer.from(hkdfSync('sha256', secret, SALT, purpose, KEY_BYTES));
}
