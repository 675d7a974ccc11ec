import { z } from 'zod';
import type { Role } from '../core/model';
import {
  ApprovalDecisionSchema,
  ApprovalsSchema,
  CreateRunSchema,
  DecisionResultSchema,
  DecisionSchema,
  EnvelopeSchema,
  ErrorSchema,
  HealthSchema,
  ModelCallRefusedSchema,
  ModelCallReservedSchema,
  ModelCallSchema,
  ModelCallSettledSchema,
  ModelCallUsageSchema,
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

/** Named schemas of the document: requests as the routes accept them (the app parses bodies with these), responses as they answer. */
export const REQUESTS = {
  CreateRun: CreateRunSchema,
  ToolCall: ToolCallSchema,
  Preview: PreviewSchema,
  Resolve: ResolveSchema,
  Decision: DecisionSchema,
  ApprovalDecision: ApprovalDecisionSchema,
  ModelCall: ModelCallSchema,
  ModelCallUsage: ModelCallUsageSchema,
} as const;
export const RESPONSES = {
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
  ModelCallReserved: ModelCallReservedSchema,
  ModelCallRefused: ModelCallRefusedSchema,
  ModelCallSettled: ModelCallSettledSchema,
} as const;
export type RequestName = keyof typeof REQUESTS;
export type SchemaName = RequestName | keyof typeof RESPONSES;

/**
 * Who may call a route with a bearer key, and where the app holds the caller to it. `caller`: the caller must
 * hold one of the roles (admins hold every role), checked before the body or any record is read. `record`: any
 * caller gets as far as the record the path names, which its owner and admins may see, and reviewers too where
 * `reviewer` is among the roles. A `caller` route that reads a record holds the caller to it the same way.
 */
export interface RoleAccess {
  roles: Role[];
  check: 'caller' | 'record';
}

export interface RouteSpec {
  method: 'get' | 'post';
  /** OpenAPI form, `{name}` for a path parameter. */
  path: string;
  /** A path parameter's pattern, where the app serves only ids of that shape. */
  params?: Record<string, string>;
  summary: string;
  /** `public` routes take no bearer key; `link` routes authenticate by a signed link instead. */
  access: RoleAccess | 'public' | 'link';
  body?: RequestName;
  /** An empty body reads as `{}`. */
  bodyOptional?: boolean;
  /** The body may also be an HTML form (the approval page posts one). */
  form?: boolean;
  query?: { name: string; required: boolean; schema: object; description: string }[];
  headers?: { name: string; schema: object; description: string }[];
  responses: Record<number, { description: string; schema?: SchemaName; html?: boolean; headers?: Record<string, string> }>;
}

const error = (description: string) => ({ description, schema: 'Error' as const });

const protectedResource = (suffix: '' | '/mcp'): RouteSpec => ({
  method: 'get',
  path: `/.well-known/oauth-protected-resource${suffix}`,
  summary: `OAuth protected-resource metadata (RFC 9728)${suffix ? ' for the MCP endpoint' : ''}`,
  access: 'public',
  responses: {
    200: { description: '`resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported`' },
    404: error('this runner accepts no OAuth access tokens (no `oauth` configured)'),
  },
});

/**
 * Every route of the API, once: the app registers each with its handler and role check (`app.ts`), and the
 * OpenAPI document lists them in this order (`openapi.ts`).
 */
export const ROUTE_TABLE = {
  health: {
    method: 'get',
    path: '/v1/health',
    summary: 'Liveness',
    access: 'public',
    responses: { 200: { description: 'the API serves', schema: 'Health' } },
  },
  openApi: {
    method: 'get',
    path: '/v1/openapi.json',
    summary: 'This document',
    access: 'public',
    responses: { 200: { description: 'the OpenAPI 3.1 document of the API' } },
  },
  protectedResource: protectedResource(''),
  protectedResourceMcp: protectedResource('/mcp'),
  createRun: {
    method: 'post',
    path: '/v1/runs',
    summary: 'Create a run with budgets',
    access: { roles: ['agent'], check: 'caller' },
    body: 'CreateRun',
    bodyOptional: true,
    responses: { 201: { description: 'the run', schema: 'Run' }, 400: error('malformed body') },
  },
  listRuns: {
    method: 'get',
    path: '/v1/runs',
    summary: 'Runs, newest first, a page at a time: an agent’s own runs; every run for reviewers and admins',
    access: { roles: ['agent', 'reviewer'], check: 'caller' },
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
  getRun: {
    method: 'get',
    path: '/v1/runs/{runId}',
    summary: 'A run with its status, budgets and usage',
    access: { roles: ['agent'], check: 'record' },
    responses: { 200: { description: 'the run', schema: 'Run' }, 404: error('no such run') },
  },
  cancelRun: {
    method: 'post',
    path: '/v1/runs/{runId}/cancel',
    summary: 'Close the run; operations in flight are cancelled',
    access: { roles: ['agent'], check: 'record' },
    responses: { 200: { description: 'the run, cancelled', schema: 'Run' }, 404: error('no such run') },
  },
  submitToolCall: {
    method: 'post',
    path: '/v1/runs/{runId}/tool-calls',
    summary: 'Submit a tool call; the same (runId, callId) is one logical operation',
    access: { roles: ['agent'], check: 'caller' },
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
      503: {
        ...error('`tools_unavailable`: the tools function could not check the arguments (throttled, failing); nothing was created or run'),
        headers: { 'Retry-After': 'seconds to wait before sending the same call again' },
      },
    },
  },
  reserveModelCall: {
    method: 'post',
    path: '/v1/runs/{runId}/model-calls',
    summary:
      'Reserve a model call’s most it can cost (its input tokens, or the model’s context window, and maxOutputTokens at the model’s price now) against the run’s spend budget before making it; the same (runId, requestId) is one reservation',
    access: { roles: ['agent'], check: 'caller' },
    body: 'ModelCall',
    responses: {
      200: {
        description:
          '`{ status: "refused", code, message }`: it does not fit (`budget_exhausted`: the run’s budget; `spend_limit`: a principal’s limit, named with when it resets); nothing was reserved and the run stays open',
        schema: 'ModelCallRefused',
      },
      201: {
        description: 'reserved: `{ modelCallId, reservedCents }`; settle it with its usage after the call',
        schema: 'ModelCallReserved',
        headers: { 'Idempotent-Replayed': '`true` when this (runId, requestId) was reserved before' },
      },
      400: error('malformed body, or a model with no price (config `modelPrices`) or, without inputTokens, no known context window'),
      404: error('no such run'),
      409: error('`request_id_conflict` (the requestId was used with another body) or `run_closed` (the run was cancelled)'),
      429: {
        ...error('`throttled`: over a `rateLimits` entry that names the model; nothing was reserved'),
        headers: { 'Retry-After': 'seconds to the next UTC minute' },
      },
    },
  },
  settleModelCall: {
    method: 'post',
    path: '/v1/runs/{runId}/model-calls/{modelCallId}/usage',
    summary:
      'Settle a reserved model call at the price of what it used; above the reservation it is charged in full (`model_call.overrun`)',
    access: { roles: ['agent'], check: 'caller' },
    body: 'ModelCallUsage',
    responses: {
      200: {
        description: 'settled: what it reserved and what it was charged (the same usage again answers the same)',
        schema: 'ModelCallSettled',
        headers: { 'Idempotent-Replayed': '`true` when this settlement was made before' },
      },
      400: error('malformed body'),
      404: error('no such run or model call'),
      409: error('`invalid_state`: settled before with other usage, or its lease ran out (its reservation was charged in full)'),
    },
  },
  getTrace: {
    method: 'get',
    path: '/v1/runs/{runId}/trace',
    summary: 'The run’s trace events in order',
    access: { roles: ['agent', 'reviewer'], check: 'record' },
    responses: { 200: { description: 'events ordered by seq', schema: 'Trace' }, 404: error('no such run') },
  },
  getOperation: {
    method: 'get',
    path: '/v1/operations/{operationId}',
    summary: 'An operation and, once reported, its envelope',
    access: { roles: ['agent', 'reviewer'], check: 'record' },
    responses: { 200: { description: 'the operation', schema: 'Operation' }, 404: error('no such operation') },
  },
  cancelOperation: {
    method: 'post',
    path: '/v1/operations/{operationId}/cancel',
    summary: 'Cancel one operation',
    access: { roles: ['agent'], check: 'record' },
    responses: {
      200: { description: 'the operation, cancelled', schema: 'Operation' },
      409: error('`invalid_state`: it already finished'),
    },
  },
  resumeOperation: {
    method: 'post',
    path: '/v1/operations/{operationId}/resume',
    summary: 'Resume one operation now, as the sweeper does for a lost execution (admin)',
    access: { roles: ['admin'], check: 'caller' },
    responses: {
      202: { description: 'the sweeper’s resume ran: `{ operationId, state, resumes }`' },
      404: error('no such operation'),
      409: error('`invalid_state`: the operation is terminal or not active'),
    },
  },
  decideApproval: {
    method: 'post',
    path: '/v1/operations/{operationId}/approval',
    summary: 'Decide an operation’s approval with an approver’s key: the same decision, under the same rules, as the signed link',
    access: { roles: ['approver'], check: 'caller' },
    body: 'ApprovalDecision',
    responses: {
      200: { description: 'the decision', schema: 'DecisionResult' },
      403: error('`forbidden`: not an approver, or the requester or run owner of this operation'),
      404: error('no such operation'),
      409: error('`invalid_state`: already decided or expired, or the operation has no approval'),
    },
  },
  resolveOperation: {
    method: 'post',
    path: '/v1/operations/{operationId}/resolve',
    summary: 'Settle an outcome_unknown operation by a person',
    access: { roles: ['reviewer'], check: 'caller' },
    body: 'Resolve',
    responses: {
      200: { description: 'the operation, settled', schema: 'Operation' },
      409: error('`invalid_state`: it is not outcome_unknown'),
    },
  },
  previewToolCall: {
    method: 'post',
    path: '/v1/runs/{runId}/tool-calls/preview',
    summary:
      'The policy decision a submission would take now (tool, authorization, arguments, budgets, approval), with no operation, no attempt and no budget used',
    access: { roles: ['agent'], check: 'caller' },
    body: 'Preview',
    responses: {
      200: { description: '`allow`, `deny` (with the code the envelope would carry) or `require_approval`', schema: 'PreviewResult' },
      409: error('`run_closed`: the run was cancelled'),
    },
  },
  listReviews: {
    method: 'get',
    path: '/v1/reviews',
    summary: 'Operations waiting for a person to settle an unknown outcome, each with its resolve URL',
    access: { roles: ['reviewer'], check: 'caller' },
    query: [{ name: 'status', required: false, schema: { type: 'string', enum: ['open'] }, description: 'only `open`' }],
    responses: { 200: { description: 'open reviews', schema: 'Reviews' } },
  },
  getTimeline: {
    method: 'get',
    path: '/v1/runs/{runId}/timeline',
    summary:
      'The trace as a timeline page for people: grouped by operation; owners and admins also see the arguments and results, with secrets masked',
    access: { roles: ['agent', 'reviewer'], check: 'record' },
    responses: { 200: { description: 'HTML page', html: true }, 404: error('no such run') },
  },
  getMetrics: {
    method: 'get',
    path: '/v1/metrics',
    summary: 'The counters this process kept (embedded stack; on AWS they go to CloudWatch as EMF)',
    access: { roles: ['admin'], check: 'caller' },
    responses: { 200: { description: '`{ metrics: [...] }`' }, 404: error('metrics are published to CloudWatch here') },
  },
  listTools: {
    method: 'get',
    path: '/v1/tools',
    summary: 'The caller’s tools with JSON Schema, in a provider’s tool-definition shape',
    access: { roles: ['agent'], check: 'caller' },
    query: [{ name: 'format', required: false, schema: z.toJSONSchema(ToolFormatSchema), description: 'default `neutral`' }],
    responses: { 200: { description: 'tool definitions', schema: 'Tools' }, 400: error('unknown format') },
  },
  listApprovals: {
    method: 'get',
    path: '/v1/approvals',
    summary: 'Pending approvals the caller may decide, each with a link signed for the caller',
    access: { roles: ['approver'], check: 'caller' },
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
  approvalPage: {
    method: 'get',
    path: '/v1/approvals/{approvalId}',
    params: { approvalId: 'apr_[A-Za-z0-9_-]+' },
    summary: 'The approval page: shows the exact operation; opening it decides nothing',
    access: 'link',
    query: [{ name: 'sig', required: true, schema: { type: 'string' }, description: 'the link’s signature' }],
    responses: {
      200: { description: 'HTML page with the frozen arguments and approve/reject buttons', html: true },
      403: { description: 'bad signature or the requester’s own operation', html: true },
    },
  },
  approvalLinkDecision: {
    method: 'post',
    path: '/v1/approvals/{approvalId}',
    params: { approvalId: 'apr_[A-Za-z0-9_-]+' },
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
  slackInteractions: {
    method: 'post',
    path: '/v1/integrations/slack/interactions',
    summary: 'Slack’s interactivity request (Approve / Deny in a Slack message), authenticated by Slack’s signature',
    access: 'public',
    headers: [
      {
        name: 'X-Slack-Signature',
        schema: { type: 'string' },
        description: '`v0=` HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing secret',
      },
      { name: 'X-Slack-Request-Timestamp', schema: { type: 'string' }, description: 'seconds since the epoch; within 300 s of now' },
    ],
    responses: {
      200: { description: 'verified; the decision, or the refusal shown in Slack, follows' },
      401: error('the signature or the timestamp does not verify'),
      404: error('no `slack` configured'),
      413: error('the body is over 256 KiB'),
    },
  },
} satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof ROUTE_TABLE;

/** The routes in the table's order. */
export const ROUTES: RouteSpec[] = Object.values(ROUTE_TABLE);

/** The body a route's handler gets: what its declared request schema parses to. */
export type BodyOf<N extends RouteName> = (typeof ROUTE_TABLE)[N] extends { body: infer B extends RequestName }
  ? z.infer<(typeof REQUESTS)[B]>
  : never;

/** The path as Hono matches it: `{name}` as `:name`, with the parameter's pattern where one is declared. */
export function honoPath(route: RouteSpec): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => `:${name}${route.params?.[name] ? `{${route.params[name]}}` : ''}`);
}
