import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { classifyAttempt } from '../../functions/core/classify';
import { defineTool, describeTools, makeRegistry, ToolRegistrationError, type ToolSpec } from '../../functions/core/tool-spec';

/** A second, real copy of zod on disk, as a user's project may have next to the runner's. */
const copyDir = mkdtempSync(join(tmpdir(), 'toolrunner-zod-copy-'));
const zodDir = dirname(createRequire(import.meta.url).resolve('zod/package.json'));
cpSync(zodDir, join(copyDir, 'node_modules/zod'), { recursive: true });
const { z: userZ } = (await import(pathToFileURL(join(copyDir, 'node_modules/zod/index.js')).href)) as typeof import('zod');

afterAll(() => rmSync(copyDir, { recursive: true, force: true }));

const spec = (inputSchema: unknown, outputSchema: unknown = userZ.object({ ok: userZ.boolean() })): ToolSpec => ({
  name: 'user_tool',
  description: 'a tool written against the user’s zod',
  inputSchema: inputSchema as ToolSpec['inputSchema'],
  outputSchema: outputSchema as ToolSpec['outputSchema'],
  risk: 'read',
  timeoutMs: 1000,
  maxAttempts: 2,
  supportsIdempotency: true,
  approval: 'never',
  execute: async () => ({ ok: true }),
});

describe('tools written against the user’s own copy of zod', () => {
  it('is a different copy: its classes are not the runner’s', () => {
    expect(userZ.ZodObject).not.toBe(z.ZodObject);
  });

  it('registers an object schema from that copy and describes it as JSON Schema', () => {
    const tool = defineTool(spec(userZ.strictObject({ id: userZ.string().min(1) })));
    const [described] = describeTools(makeRegistry([tool]), 'neutral') as { inputSchema: { properties: object; required: string[] } }[];
    expect(described.inputSchema).toMatchObject({ type: 'object', properties: { id: { type: 'string', minLength: 1 } }, required: ['id'] });
  });

  it('refuses a non-object input schema or something that is not a zod schema at all', () => {
    expect(() => defineTool(spec(userZ.string()))).toThrow(ToolRegistrationError);
    expect(() => defineTool(spec({ type: 'object' }))).toThrow(/inputSchema must be a zod object/);
    expect(() => defineTool(spec(userZ.object({}), { parse: () => 1 }))).toThrow(/outputSchema must be a zod schema/);
  });

  it('classifies transport errors from another copy of the package by name and shape', () => {
    const tool = spec(userZ.object({}));
    const upstream = Object.assign(new Error('upstream answered 503'), {
      name: 'UpstreamHttpError',
      status: 503,
      code: undefined,
      retryAfterSeconds: 3,
    });
    expect(classifyAttempt(tool, { ok: false, thrown: upstream })).toMatchObject({
      kind: 'failed_retryable',
      code: 'upstream_unavailable',
      retryAfterSeconds: 3,
    });
    const lost = Object.assign(new Error('connection lost'), { name: 'TransportError', reason: 'reset', requestSent: true });
    expect(classifyAttempt({ ...tool, risk: 'reversible_write', supportsIdempotency: false }, { ok: false, thrown: lost })).toMatchObject({
      kind: 'outcome_unknown',
    });
    const impostor = Object.assign(new Error('x'), { name: 'UpstreamHttpError' });
    expect(classifyAttempt(tool, { ok: false, thrown: impostor })).toMatchObject({
      kind: 'failed_retryable',
      message: 'the tool failed unexpectedly',
    });
  });
});
