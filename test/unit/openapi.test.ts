import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { makeApp } from '../../functions/api/app';
import { openApiDocument } from '../../functions/api/openapi';
import { ROUTES } from '../../functions/api/route-table';
import type { Deps } from '../../functions/steps/deps';

const doc = openApiDocument() as {
  paths: Record<string, Record<string, { security?: unknown[]; requestBody?: unknown }>>;
  components: { schemas: Record<string, unknown> };
};

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 by a third-party validator', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every route the app serves, and no other', () => {
    // Building the app registers its routes; no request is served, so no dependency is used.
    const app = makeApp({} as Deps);
    const served = new Set(
      app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)),
    );
    expect([...documented].sort()).toEqual([...served].sort());
  });

  it('marks exactly the routes without a bearer key as open', () => {
    const open = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => Array.isArray(op.security) && op.security.length === 0)
        .map(([m]) => `${m} ${path}`),
    );
    expect(open.sort()).toEqual([
      'get /.well-known/oauth-protected-resource',
      'get /.well-known/oauth-protected-resource/mcp',
      'get /v1/approvals/{approvalId}',
      'get /v1/health',
      'get /v1/openapi.json',
      'post /v1/approvals/{approvalId}',
      'post /v1/integrations/slack/interactions',
    ]);
  });

  it('takes request bodies from the schemas that validate them', () => {
    expect(doc.components.schemas.ToolCall).toMatchObject({
      type: 'object',
      required: ['callId', 'turn', 'name', 'arguments'],
      additionalProperties: false,
      properties: { callId: { type: 'string', maxLength: 128 }, turn: { type: 'integer' } },
    });
    expect(ROUTES.find((r) => r.path === '/v1/runs/{runId}/tool-calls')?.body).toBe('ToolCall');
  });

  it('is the copy kept in docs/openapi.json (regenerate with npm run docs:openapi)', () => {
    const kept = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    expect(kept).toEqual(JSON.parse(JSON.stringify(doc)));
  });
});
