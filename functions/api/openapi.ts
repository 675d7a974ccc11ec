import { z } from 'zod';
import { REQUESTS, RESPONSES, ROUTES, type RouteSpec, type SchemaName } from './route-table';

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

/** A zod schema as a JSON Schema 2020-12 fragment (the dialect of OpenAPI 3.1), without its `$schema`. */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

function operationOf(route: RouteSpec): Record<string, unknown> {
  const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const parameters = [
    ...pathParams,
    ...(route.query ?? []).map((q) => ({
      name: q.name,
      in: 'query',
      required: q.required,
      description: q.description,
      schema: stripDialect(q.schema),
    })),
    ...(route.headers ?? []).map((h) => ({ name: h.name, in: 'header', required: false, description: h.description, schema: h.schema })),
  ];
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    responses[status] = {
      description: r.description,
      ...(r.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(r.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
            ),
          }
        : {}),
      ...(r.html
        ? { content: { 'text/html': { schema: { type: 'string' } } } }
        : r.schema
          ? { content: { 'application/json': { schema: ref(r.schema) } } }
          : {}),
    };
  }
  if (typeof route.access === 'object') {
    responses['401'] ??= { description: 'no valid bearer key', content: { 'application/json': { schema: ref('Error') } } };
    responses['403'] ??= {
      description: 'the caller lacks the role or does not own the record',
      content: { 'application/json': { schema: ref('Error') } },
    };
  }
  const who =
    route.access === 'public'
      ? 'Anyone.'
      : route.access === 'link'
        ? 'The holder of a signed approval link (no bearer key).'
        : `Roles: ${route.access.roles.join(', ')} (owners see their own records; admins see all).`;
  return {
    operationId: operationIdOf(route),
    summary: route.summary,
    description: who,
    ...(route.access === 'public' || route.access === 'link' ? { security: [] } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: ref(route.body) },
              ...(route.form ? { 'application/x-www-form-urlencoded': { schema: ref(route.body) } } : {}),
            },
          },
        }
      : {}),
    responses,
  };
}

function stripDialect(schema: object): object {
  const { $schema: _dialect, ...rest } = schema as Record<string, unknown>;
  return rest;
}

function operationIdOf(route: RouteSpec): string {
  const words = route.path
    .replace(/^\/v1\//, '')
    .split(/[/.-]/)
    .filter((w) => w && !w.startsWith('{'));
  const name = words.map((w, i) => (i === 0 ? w : w[0].toUpperCase() + w.slice(1))).join('');
  const byId = route.path.endsWith('}') ? 'ById' : '';
  return `${route.method}${name[0].toUpperCase()}${name.slice(1)}${byId}`;
}

/** The OpenAPI 3.1 document of every route, generated from the schemas that validate requests. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    paths[route.path] ??= {};
    paths[route.path][route.method] = operationOf(route);
  }
  const schemas = {
    ...Object.fromEntries(Object.entries(REQUESTS).map(([name, s]) => [name, jsonSchemaOf(s, 'input')])),
    ...Object.fromEntries(Object.entries(RESPONSES).map(([name, s]) => [name, jsonSchemaOf(s, 'output')])),
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'toolrunner API',
      version: '1',
      description:
        'JSON in and out. Errors are `{ "error": { "code", "message" } }`: 400 invalid_request, 401 unauthenticated, 403 forbidden, 404 not_found, 409 call_id_conflict | run_closed | invalid_state, 413 payload_too_large, 429 throttled. Unknown tools, invalid arguments, forbidden tools and exhausted budgets are envelopes, not HTTP errors.',
    },
    servers: [{ url: 'http://127.0.0.1:3000', description: 'npm start / toolrunner start' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a principal’s key from the principals file or secret' } },
      schemas,
    },
  };
}
