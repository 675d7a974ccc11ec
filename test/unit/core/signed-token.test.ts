import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { decodeJson, encodeJson, signToken, verifyToken } from '../../../functions/core/signed-token';

const key = Buffer.alloc(32, 7);
const Claims = z.strictObject({ runId: z.string(), exp: z.number() });

describe('signed tokens', () => {
  it('round-trip their claims under the same key and label', () => {
    const token = signToken(key, 'mcp-session', { runId: 'run_1', exp: 1 });
    expect(verifyToken(key, 'mcp-session', token, Claims, 1000)).toEqual({ runId: 'run_1', exp: 1 });
  });

  it('refuse another label, another key, tampered claims, off-schema claims and oversized tokens', () => {
    const token = signToken(key, 'mcp-session', { runId: 'run_1', exp: 1 });
    expect(verifyToken(key, 'console', token, Claims, 1000)).toBeUndefined();
    expect(verifyToken(Buffer.alloc(32, 8), 'mcp-session', token, Claims, 1000)).toBeUndefined();
    const [, mac] = token.split('.');
    expect(verifyToken(key, 'mcp-session', `${encodeJson({ runId: 'run_2', exp: 1 })}.${mac}`, Claims, 1000)).toBeUndefined();
    const extra = signToken(key, 'mcp-session', { runId: 'run_1', exp: 1, admin: true });
    expect(verifyToken(key, 'mcp-session', extra, Claims, 1000)).toBeUndefined();
    expect(verifyToken(key, 'mcp-session', token, Claims, 10)).toBeUndefined();
  });

  it('decode base64url JSON only when it fits the schema, never throwing', () => {
    expect(decodeJson(encodeJson({ runId: 'r', exp: 2 }), Claims, 100)).toEqual({ runId: 'r', exp: 2 });
    for (const bad of ['!!', 'bm90IGpzb24', encodeJson([1]), ''.padEnd(200, 'a')]) expect(decodeJson(bad, Claims, 100)).toBeUndefined();
  });
});
