import { z } from 'zod';
import {
  ApprovalDecisionSchema,
  ApprovalsSchema,
  CreateRunSchema,
  DecisionResultSchema,
  DecisionSchema,
  EnvelopeSchema,
  ErrorSchema,
  HealthSchema,
  OperationSchema,
  PendingSchema,
  PreviewResultSchema,
  PreviewSchema,
  ReviewsSchema,
  ResolveSchema,
  RunSchema,
  RunsSchema,
  RunStatusSchema,
  ToolCallSchema,
  ToolFormatSchema,
  ToolsSchema,
  TraceEventSchema,
  TraceSchema,
} from '../http/schemas';

/** Named schemas of the document: requests as the routes accept them, responses as they answer. */
const REQUESTS = {
  CreateRun: CreateRunSchema,
  ToolCall: ToolCallSchema,
  Preview: PreviewSchema,
  Resolve: ResolveSchema,
  Decision: DecisionSchema,
  ApprovalDecision: ApprovalDecisionSchema,
} as const;
const RESPONSES = {
  Error: ErrorSchema,
  Health: HealthSchema,
  Run: RunSchema,
  Runs: RunsSchema,
  Envelope: EnvelopeSchema,
  Pending: PendingSchema,
  Operation: OperationSchema,
  TraceEvent: TraceEventSchema,
  Trace: TraceSchema,
  Tools: ToolsSchema,
  Approvals: ApprovalsSchema,
  DecisionResult: DecisionResultSchema,
  PreviewResult: PreviewResultSchema,
  Reviews: ReviewsSchema,
} as const;
type SchemaName = keyof typeof REQUESTS | keyof typeof RESPONSES;

type Role = 'agent' | 'approver' | 'reviewer' | 'admin';

interface Route {
  method: 'get' | 'post';
  path: string;
  summary: string;
  /** Who may call it; `public` routes take no bearer key. */
  access: Role[] | 'public' | 'link';
  body?: SchemaName;
  /** The body may also be an HTML form (the approval page posts one). */
  form?: boolean;
  query?: { name: string; required: boolean; schema: object; description: string }[];
  headers?: { name: string; schema: object; description: string }[];
  responses: Record<number, { description: string; schema?: SchemaName; html?: boolean; headers?: Record<string, string> }>;
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const error = (description: string) => ({ description, schema: 'Error' as const });

/** Every route of `app.ts`; a test checks this list against the app's own routes. */
export const ROUTES: Route[] = [
  {
    method: 'get',
    path: '/v1/health',
    summary: 'Liveness',
    access: 'public',
    responses: { 200: { description: 'the API serves', schema: 'Health' } },
  },
  {
    method: 'get',
    path: '/v1/openapi.json',
    summary: 'This document',
    access: 'public',
    responses: { 200: { description: 'the OpenAPI 3.1 document of the API' } },
  },
  ...(['', '/mcp'] as const).map(
    (suffix): Route => ({
      method: 'get',
      path: `/.well-known/oauth-protected-resource${suffix}`,
      summary: `OAuth protected-resource metadata (RFC 9728)${suffix ? ' for the MCP endpoint' : ''}`,
      access: 'public',
      responses: {
        200: { description: '`resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported`' },
        404: error('this runner accepts no OAuth access tokens (no `oauth` configured)'),
      },
    }),
  ),
  {
    method: 'post',
    path: '/v1/runs',
    summary: 'Create a run with budgets',
    access: ['agent'],
    body: 'CreateRun',
    responses: { 201: { description: 'the run', schema: 'Run' }, 400: error('malformed body') },
  },
  {
    method: 'get',
    path: '/v1/runs',
    summary: 'Runs, newest first, a page at a time: an agent’s own runs; every run for reviewers and admins',
    access: ['agent', 'reviewer'],
    query: [
      {
        name: 'status',
        required: false,
        schema: z.toJSONSchema(RunStatusSchema),
        description: 'only runs with this status (as `GET /v1/runs/{runId}` shows it)',
      },
      { name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 }, description: 'page size, default 50' },
      { name: 'cursor', required: false, schema: { type: 'string' }, description: 'the `nextCursor` of the previous page' },
    ],
    responses: {
      200: {
        description: 'one page of runs; `nextCursor` when there may be more (a page may hold fewer than `limit` runs then)',
        schema: 'Runs',
      },
      400: error('a bad status, limit or cursor'),
    },
  },
  {
    method: 'get',
    path: '/v1/runs/{runId}',
    summary: 'A run with its status, budgets and usage',
    access: ['agent'],
    responses: { 200: { description: 'the run', schema: 'Run' }, 404: error('no such run') },
  },
  {
    method: 'post',
    path: '/v1/runs/{runId}/cancel',
    summary: 'Close the run; operations in flight are cancelled',
    access: ['agent'],
    responses: { 200: { description: 'the run, cancelled', schema: 'Run' }, 404: error('no such run') },
  },
  {
    method: 'post',
    path: '/v1/runs/{runId}/tool-calls',
    summary: 'Submit a tool call; the same (runId, callId) is one logical operation',
    access: ['agent'],
    body: 'ToolCall',
    headers: [
      {
        name: 'Prefer',
        schema: { type: 'string', pattern: '^wait=\\d+$' },
        description:
          '`wait=N`: wait up to N seconds (0 to 25, default 10; a deployed stack waits at most 25 s, or its API ceiling over its rate limit with reserved concurrency; none when every waiting slot is held) for the envelope',
      },
    ],
    responses: {
      200: {
        description: 'the envelope, once the call is reported',
        schema: 'Envelope',
        headers: { 'Idempotent-Replayed': '`true` when this (runId, callId) was submitted before' },
      },
      202: {
        description: 'not reported yet: it waits for a person or took longer than the wait',
        schema: 'Pending',
        headers: {
          'Retry-After':
            'when every waiting slot of the deployment was held, so it was answered without waiting: seconds before polling again',
        },
      },
      400: error('malformed body'),
      404: error('no such run'),
      409: error('`call_id_conflict` (the callId was used with other arguments) or `run_closed` (the run was cancelled)'),
      413: error('body over 256 KiB'),
      429: {
        ...error(
          '`throttled`: over a rate limit (config `rateLimits`); nothing was created and no budget used. A replay of a call already taken is never throttled',
        ),
        headers: {
          'Retry-After': 'seconds to wait before sending the call again: to the next UTC minute for `perMinute`, 1 for `concurrent`',
        },
      },
    },
  },
  {
    method: 'get',
    path: '/v1/runs/{runId}/trace',
    summary: 'The run’s trace events in order',
    access: ['agent', 'reviewer'],
    responses: { 200: { description: 'events ordered by seq', schema: 'Trace' }, 404: error('no such run') },
  },
  {
    method: 'get',
    path: '/v1/operations/{operationId}',
    summary: 'An operation and, once reported, its envelope',
    access: ['agent', 'reviewer'],
    responses: { 200: { description: 'the operation', schema: 'Operation' }, 404: error('no such operation') },
  },
  {
    method: 'post',
    path: '/v1/operations/{operationId}/cancel',
    summary: 'Cancel one operation',
    access: ['agent'],
    responses: {
      200: { description: 'the operation, cancelled', schema: 'Operation' },
      409: error('`invalid_state`: it already finished'),
    },
  },
  {
    method: 'post',
    path: '/v1/operations/{operationId}/resume',
    summary: 'Resume one operation now, as the sweeper does for a lost execution (admin)',
    access: ['admin'],
    responses: {
      202: { description: 'the sweeper’s resume ran: `{ operationId, state, resumes }`' },
      404: error('no such operation'),
      409: error('`invalid_state`: the operation is terminal or not active'),
    },
  },
  {
    method: 'post',
    path: '/v1/operations/{operationId}/approval',
    summary: 'Decide an operation’s approval with an approver’s key: the same decision, under the same rules, as the signed link',
    access: ['approver'],
    body: 'ApprovalDecision',
    responses: {
      200: { description: 'the decision', schema: 'DecisionResult' },
      403: error('`forbidden`: not an approver, or the requester or run owner of this operation'),
      404: error('no such operation'),
      409: error('`invalid_state`: already decided or expired, or the operation has no approval'),
    },
  },
  {
    method: 'post',
    path: '/v1/operations/{operationId}/resolve',
    summary: 'Settle an outcome_unknown operation by a person',
    access: ['reviewer'],
    body: 'Resolve',
    responses: {
      200: { description: 'the operation, settled', schema: 'Operation' },
      409: error('`invalid_state`: it is not outcome_unknown'),
    },
  },
  {
    method: 'post',
    path: '/v1/runs/{runId}/tool-calls/preview',
    summary:
      'The policy decision a submission would take now (tool, authorization, arguments, budgets, approval), with no operation, no attempt and no budget used',
    access: ['agent'],
    body: 'Preview',
    responses: {
      200: { description: '`allow`, `deny` (with the code the envelope would carry) or `require_approval`', schema: 'PreviewResult' },
      409: error('`run_closed`: the run was cancelled'),
    },
  },
  {
    method: 'get',
    path: '/v1/reviews',
    summary: 'Operations waiting for a person to settle an unknown outcome, each with its resolve URL',
    access: ['reviewer'],
    query: [{ name: 'status', required: false, schema: { type: 'string', enum: ['open'] }, description: 'only `open`' }],
    responses: { 200: { description: 'open reviews', schema: 'Reviews' } },
  },
  {
    method: 'get',
    path: '/v1/runs/{runId}/timeline',
    summary:
      'The trace as a timeline page for people: grouped by operation; owners and admins also see the arguments and results, with secrets masked',
    access: ['agent', 'reviewer'],
    responses: { 200: { description: 'HTML page', html: true }, 404: error('no such run') },
  },
  {
    method: 'get',
    path: '/v1/metrics',
    summary: 'The counters this process kept (embedded stack; on AWS they go to CloudWatch as EMF)',
    access: ['admin'],
    responses: { 200: { description: '`{ metrics: [...] }`' }, 404: error('metrics are published to CloudWatch here') },
  },
  {
    method: 'get',
    path: '/v1/tools',
    summary: 'The caller’s tools with JSON Schema, in a provider’s tool-definition shape',
    access: ['agent'],
    query: [{ name: 'format', required: false, schema: z.toJSONSchema(ToolFormatSchema), description: 'default `neutral`' }],
    responses: { 200: { description: 'tool definitions', schema: 'Tools' }, 400: error('unknown format') },
  },
  {
    method: 'get',
    path: '/v1/approvals',
    summary: 'Pending approvals the caller may decide, each with a link signed for the caller',
    access: ['approver'],
    query: [
      { name: 'status', required: false, schema: { type: 'string', enum: ['pending'] }, description: 'only `pending`' },
      { name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 }, description: 'page size, default 50' },
      { name: 'cursor', required: false, schema: { type: 'string' }, description: 'the `nextCursor` of the previous page' },
    ],
    responses: {
      200: { description: 'one page of pending approvals; `nextCursor` when there may be more', schema: 'Approvals' },
      400: error('a bad limit or cursor'),
    },
  },
  {
    method: 'get',
    path: '/v1/approvals/{approvalId}',
    summary: 'The approval page: shows the exact operation; opening it decides nothing',
    access: 'link',
    query: [{ name: 'sig', required: true, schema: { type: 'string' }, description: 'the link’s signature' }],
    responses: {
      200: { description: 'HTML page with the frozen arguments and approve/reject buttons', html: true },
      403: { description: 'bad signature or the requester’s own operation', html: true },
    },
  },
  {
    method: 'post',
    path: '/v1/approvals/{approvalId}',
    summary: 'Decide an approval, once, before it expires',
    access: 'link',
    body: 'Decision',
    form: true,
    responses: {
      200: { description: 'the decision (HTML when posted as a form)', schema: 'DecisionResult' },
      403: error('bad signature or the requester’s own operation'),
      409: error('`invalid_state`: already decided or expired'),
    },
  },
];

/** A zod schema as a JSON Schema 2020-12 fragment (the dialect of OpenAPI 3.1), without its `$schema`. */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

function operationOf(route: Route): Record<string, unknown> {
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
  if (Array.isArray(route.access)) {
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
        : `Roles: ${route.access.join(', ')} (owners see their own records; admins see all).`;
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

function operationIdOf(route: Route): string {
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
