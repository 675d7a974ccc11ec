import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { except } from 'hono/combine';
import type { z } from 'zod';
import type { OperationRecord, Principal, RunRecord } from '../core/model';
import { isSaneId, JSON_BOUNDS, parseBoundedJson } from '../core/json-bounds';
import { hasRole } from '../core/policy';
import { hashValue } from '../core/canonical';
import { describeTools, type ToolFormat } from '../core/tool-spec';
import { decideApproval, decideAs, mayDecide, openApproval } from '../commands/approval-decisions';
import { approvalUrl } from '../steps/approval';
import { resumeOperation } from '../steps/resume';
import { cancelOperation, cancelRun, resolveOperation } from '../commands/cancel';
import { operationIdFor } from '../core/ids';
import type { Deps } from '../core/ports';
import { requesterOf } from '../core/record-predicates';
import { createRun, runsFirstAttemptInline, submitToolCall } from '../commands/submit';
import { approvalPage, decisionPage } from '../html/approval-page';
import { authenticateBearer, bearerChallenge, bearerKeyOf, protectedResourceMetadata } from '../http/authenticate';
import { bodySizeLimit } from '../http/body-limit';
import { PAGE_SECURITY_HEADERS } from '../html/page-basics';
import { decodeCursor, encodeCursor, PendingApprovalKeySchema, RunListKeySchema } from './cursor';
import { listRunsPage } from './runs';
import { toolsReady } from '../tools/mcp-upstream';
import { previewToolCall } from './preview';
import { openReviews } from './reviews';
import { operationDetails, operationView, runView } from './views';
import { openApiDocument } from './openapi';
import {
  ApprovalDecisionSchema,
  CreateRunSchema,
  DecisionSchema,
  ListApprovalsQuerySchema,
  ListRunsQuerySchema,
  MAX_BODY_BYTES,
  PreviewSchema,
  ResolveSchema,
  ToolCallSchema,
  ToolFormatSchema,
} from '../http/schemas';
import { timelineModel } from '../core/timeline';
import { validTraceparent } from '../core/trace-context';
import { PAGE_HEADERS, timelinePage } from '../html/timeline-page';
import { LONGEST_WAIT_SECONDS } from '../http/wait';
import { NO_SLOT_RETRY_AFTER_SECONDS, waitForSettled, waitingPass, watchOperation } from './long-poll';
import { deliveredEnvelope } from './deliver';
import { RunnerError } from '../core/errors';
import { logOf } from '../core/log';

export { MAX_BODY_BYTES };
const DEFAULT_WAIT_SECONDS = 10;

type Env = { Variables: { principal: Principal } };

/** Errors are `{ error: { code, message } }` (the README's "Using it" and `docs/openapi.json`); nothing else, and never a stack. */
class ApiError extends RunnerError {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const MAX_SIG_CHARS = 2000;

async function jsonBody<T>(c: Context, schema: z.ZodType<T>, optional = false): Promise<T> {
  const text = await c.req.text();
  if (!text.trim()) {
    if (optional) return schema.parse({});
    throw new ApiError(400, 'invalid_request', 'a JSON body is required');
  }
  // Bounds first: hostile depth, numbers and keys are answered here, before any schema or store sees them.
  const bounded = parseBoundedJson(text);
  if (!bounded.ok) throw new ApiError(400, 'invalid_request', bounded.reason === 'syntax' ? 'the body is not valid JSON' : bounded.message);
  const parsed = schema.safeParse(bounded.value);
  if (!parsed.success) throw new ApiError(400, 'invalid_request', issuesText(parsed.error));
  return parsed.data;
}

/** A query string checked with a zod schema: each name once, anything else is `400 invalid_request`. */
function queryOf<S extends z.ZodType>(c: Context, schema: S): z.infer<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw new ApiError(400, 'invalid_request', issuesText(parsed.error));
  return parsed.data;
}

function issuesText(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
    .join('; ');
}

/**
 * Tool-call `arguments`, as an object or as a JSON string, at most 128 KiB; a JSON string gets the same
 * bounds as an object would. A string that is not JSON at all is left alone: it becomes an
 * `invalid_arguments` envelope, which the model can act on.
 */
function assertArgumentsBounded(args: unknown): void {
  const text = typeof args === 'string' ? args : JSON.stringify(args);
  if (Buffer.byteLength(text) > JSON_BOUNDS.maxArgumentsBytes)
    throw new ApiError(400, 'invalid_request', `arguments: over ${JSON_BOUNDS.maxArgumentsBytes / 1024} KiB`);
  if (typeof args !== 'string') return;
  const bounded = parseBoundedJson(args, ['arguments'], JSON_BOUNDS.maxDepth - 1);
  if (!bounded.ok && bounded.reason === 'bounds') throw new ApiError(400, 'invalid_request', bounded.message);
}

/** A path id: anything the API could not have issued names nothing (404), whatever its length. */
function pathId(c: Context, name: string, what: string): string {
  const id = c.req.param(name);
  if (!isSaneId(id)) throw new ApiError(404, 'not_found', `no such ${what}`);
  return id;
}

/** Approval pages show untrusted text: no scripts, no framing, no referrer carrying the signed link. */
function securePage(c: Context): void {
  c.header('Cache-Control', 'no-store');
  for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) c.header(name, value);
}

/** `Prefer: wait=N`, 0 to the deployment's longest wait (25 s locally), default 10 (or that longest, if shorter). */
export function preferredWaitSeconds(header: string | undefined, longest = LONGEST_WAIT_SECONDS): number {
  const match = header?.match(/(?:^|[;,\s])wait=(\d+)/);
  return Math.min(longest, match ? Math.max(0, Number(match[1])) : DEFAULT_WAIT_SECONDS);
}

/** The API as one Hono app: served by API Gateway + Lambda on AWS and by a Node HTTP server locally. */
export function makeApp(deps: Deps, longestWaitSeconds = LONGEST_WAIT_SECONDS): Hono<Env> {
  const app = new Hono<Env>();

  app.onError(async (error, c) => {
    if (error instanceof ApiError && error.status === 401) {
      // RFC 9728: every 401 says where a client finds the authorization server (when there is one).
      const presented = bearerKeyOf(c.req.header('authorization')) !== undefined;
      const challenge = bearerChallenge(await deps.config().catch(() => ({})), deps.publicBaseUrl, '', presented);
      return c.json({ error: { code: error.code, message: error.message } }, 401, { 'WWW-Authenticate': challenge });
    }
    if (error instanceof ApiError) return c.json({ error: { code: error.code, message: error.message } }, error.status);
    logOf(deps).error('unhandled API error', { error: error.name, detail: error.message });
    return c.json({ error: { code: 'internal', message: 'internal error' } }, 500);
  });
  app.notFound((c) => c.json({ error: { code: 'not_found', message: 'no such route' } }, 404));
  app.use(
    '*',
    bodySizeLimit(MAX_BODY_BYTES, (c) =>
      // The rest of the body is never read, so the connection cannot be reused: say so to the client.
      c.json({ error: { code: 'payload_too_large', message: 'the body is over 256 KiB' } }, 413, { Connection: 'close' }),
    ),
  );

  // Routes that skip authentication live on their own sub-app; only its paths are exempt from the bearer check.
  const open = publicRoutes(deps);
  app.route('/', open);

  const authenticate: MiddlewareHandler<Env> = async (c, next) => {
    const bearer = bearerKeyOf(c.req.header('authorization'));
    const who = bearer ? await authenticateBearer(await deps.config(), bearer, deps.publicBaseUrl) : undefined;
    if (!who) throw new ApiError(401, 'unauthenticated', 'a valid bearer key or access token is required');
    c.set('principal', who.principal);
    await next();
  };
  app.use('/v1/*', except(pathsOf(open), authenticate));

  const requireRole = (c: Context<Env>, role: Principal['roles'][number]) => {
    if (!hasRole(c.get('principal'), role)) throw new ApiError(403, 'forbidden', `this route needs the ${role} role`);
  };

  /** Owners and admins see their records; reviewers too where the route allows it. */
  function assertVisible(c: Context<Env>, ownerId: string, what: string, allowReviewer: boolean): void {
    const principal = c.get('principal');
    if (ownerId === principal.id || hasRole(principal, 'admin') || (allowReviewer && hasRole(principal, 'reviewer'))) return;
    throw new ApiError(403, 'forbidden', `this ${what} belongs to another principal`);
  }

  /** `recent`: a run this process remembers will do (only for admitting a call: see steps/recent-runs.ts). */
  async function ownRun(c: Context<Env>, options: { allowReviewer?: boolean; recent?: boolean } = {}): Promise<RunRecord> {
    const { allowReviewer = false, recent = false } = options;
    const runId = pathId(c, 'runId', 'run');
    const run = (recent ? deps.recentRuns?.get(runId) : undefined) ?? (await deps.store.getRun(runId));
    if (!run) throw new ApiError(404, 'not_found', 'no such run');
    assertVisible(c, run.principalId, 'run', allowReviewer);
    return run;
  }

  async function visibleOperation(c: Context<Env>, allowReviewer: boolean): Promise<OperationRecord> {
    const op = await deps.store.getOperation(pathId(c, 'operationId', 'operation'));
    if (!op) throw new ApiError(404, 'not_found', 'no such operation');
    assertVisible(c, op.principalId, 'operation', allowReviewer);
    return op;
  }

  app.post('/v1/runs', async (c) => {
    requireRole(c, 'agent');
    const body = await jsonBody(c, CreateRunSchema, true);
    const principal = c.get('principal');
    const key = c.req.header('idempotency-key');
    if (!key || !deps.onceGuard) return c.json(runView(await createRun(deps, principal, body.budgets, body.metadata), deps.now()), 201);
    if (key.length > 255) throw new ApiError(400, 'invalid_request', 'Idempotency-Key is longer than 255 characters');
    // A client retrying run creation after a timeout gets the same run, not a second one.
    const guarded = await deps.onceGuard(
      { scope: principal.id, key, payloadHash: hashValue(body) },
      async () => (await createRun(deps, principal, body.budgets, body.metadata)).runId,
    );
    if (guarded.kind === 'payload_mismatch')
      throw new ApiError(409, 'invalid_state', 'this Idempotency-Key was used with a different body');
    const run = await deps.store.getRun(guarded.value);
    if (!run) throw new ApiError(404, 'not_found', 'no such run');
    if (guarded.replayed) c.header('Idempotent-Replayed', 'true');
    // 201 either way, as the contract says; the header tells a replay.
    return c.json(runView(run, deps.now()), 201);
  });

  app.get('/v1/runs', async (c) => {
    const principal = c.get('principal');
    if (!hasRole(principal, 'agent') && !hasRole(principal, 'reviewer'))
      throw new ApiError(403, 'forbidden', 'this route needs the agent, reviewer or admin role');
    const query = queryOf(c, ListRunsQuerySchema);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, RunListKeySchema);
    if (query.cursor !== undefined && !after) throw new ApiError(400, 'invalid_request', 'cursor is not one this API handed out');
    return c.json(await listRunsPage(deps, principal, { status: query.status, limit: query.limit, after }));
  });

  app.get('/v1/runs/:runId', async (c) => c.json(runView(await ownRun(c), deps.now())));

  app.post('/v1/runs/:runId/cancel', async (c) => {
    const run = await ownRun(c);
    return c.json(runView(await cancelRun(deps, run), deps.now()));
  });

  app.post('/v1/runs/:runId/tool-calls', async (c) => {
    requireRole(c, 'agent');
    // The body is bounded and parsed before the run is read: hostile input never costs a store read.
    const call = await jsonBody(c, ToolCallSchema);
    assertArgumentsBounded(call.arguments);
    const run = await ownRun(c, { recent: true });
    const preferred = preferredWaitSeconds(c.req.header('prefer'), longestWaitSeconds);
    const operationId = operationIdFor(run.runId, call.callId);
    // A wait for work done elsewhere holds one of the deployment's waiting slots; a call whose first attempt this
    // process runs is working, and takes none. Without a slot the call is submitted as one that does not wait.
    const pass = waitingPass(deps, operationId, preferred);
    const working = preferred > 0 && runsFirstAttemptInline(deps, call.name, preferred);
    const waitSeconds = preferred > 0 && !working && !(await pass.take()) ? 0 : preferred;
    // Listening before submitting: no change the execution commits can slip past the wait, so no read is needed.
    const watcher = watchOperation(deps, operationId);
    try {
      const submitted = await submitToolCall(deps, run, c.get('principal'), call, {
        waitSeconds,
        traceparent: validTraceparent(c.req.header('traceparent')),
      });
      if (submitted.kind === 'conflict')
        throw new ApiError(409, 'call_id_conflict', 'this callId was already used with different arguments');
      if (submitted.kind === 'run_closed') throw new ApiError(409, 'run_closed', 'the run was cancelled');
      if (submitted.kind === 'throttled')
        return c.json({ error: { code: 'throttled', message: submitted.message } }, 429, {
          'Retry-After': String(submitted.retryAfterSeconds),
        });
      if (submitted.kind === 'replayed') c.header('Idempotent-Replayed', 'true');
      const op = await waitForSettled(
        deps,
        watcher,
        submitted.op,
        waitSeconds,
        submitted.kind === 'created' ? submitted.finished : undefined,
        submitted.kind === 'created' && submitted.inline ? undefined : pass,
      );
      const envelope = await deliveredEnvelope(deps, op);
      if (envelope) return c.json(envelope, 200);
      const pending = { operationId: op.operationId, state: op.state, statusUrl: `/v1/operations/${op.operationId}` };
      // Answered without the wait it asked for (every waiting slot held): when to poll again.
      return c.json(pending, 202, pass.refused ? { 'Retry-After': String(NO_SLOT_RETRY_AFTER_SECONDS) } : {});
    } finally {
      watcher.close();
      await pass.release();
    }
  });

  /** The operation as this caller may see it: with the envelope the model gets; the idempotency key for reviewers and admins. */
  async function operationAnswer(c: Context<Env>, op: OperationRecord) {
    return operationView(op, await deliveredEnvelope(deps, op), hasRole(c.get('principal'), 'reviewer'));
  }

  app.get('/v1/operations/:operationId', async (c) => c.json(await operationAnswer(c, await visibleOperation(c, true))));

  app.post('/v1/operations/:operationId/cancel', async (c) => {
    const op = await visibleOperation(c, false);
    const result = await cancelOperation(deps, op);
    if (!result.ok) throw new ApiError(409, 'invalid_state', `an operation in state ${result.op.state} cannot be cancelled`);
    return c.json(await operationAnswer(c, result.op));
  });

  // An operator's nudge: the sweeper's resume for one operation now (a fresh execution from the durable record;
  // an attempt that was in flight is presumed lost and reconciled, never sent again blindly).
  app.post('/v1/operations/:operationId/resume', async (c) => {
    requireRole(c, 'admin');
    const op = await deps.store.getOperation(pathId(c, 'operationId', 'operation'));
    if (!op) throw new ApiError(404, 'not_found', 'no such operation');
    if (!(await resumeOperation(deps, op.operationId)))
      throw new ApiError(409, 'invalid_state', `an operation in state ${op.state} is not active: there is nothing to resume`);
    const now = await deps.store.getOperation(op.operationId);
    return c.json({ operationId: op.operationId, state: now?.state ?? op.state, resumes: now?.resumes ?? op.resumes }, 202);
  });

  // The signed link's decision, made with an approver's key (the people's console, scripts): the same rules.
  app.post('/v1/operations/:operationId/approval', async (c) => {
    requireRole(c, 'approver');
    const body = await jsonBody(c, ApprovalDecisionSchema);
    const op = await deps.store.getOperation(pathId(c, 'operationId', 'operation'));
    if (!op) throw new ApiError(404, 'not_found', 'no such operation');
    if (!op.approval) throw new ApiError(409, 'invalid_state', 'this operation has no approval to decide');
    const access = mayDecide(c.get('principal'), op);
    const result = access.ok ? await decideAs(deps, access, body.decision, body.reason) : access;
    if (!result.ok) throw new ApiError(result.status, result.code, result.message);
    return c.json({ approvalId: op.approval.approvalId, operationId: op.operationId, state: result.op.approval?.state ?? 'pending' });
  });

  app.post('/v1/operations/:operationId/resolve', async (c) => {
    requireRole(c, 'reviewer');
    const body = await jsonBody(c, ResolveSchema);
    const op = await visibleOperation(c, true);
    const result = await resolveOperation(deps, op, c.get('principal'), body.outcome, body.note);
    if (!result.ok)
      throw new ApiError(409, 'invalid_state', `only an outcome_unknown operation can be resolved; this one is ${result.op.state}`);
    return c.json(await operationAnswer(c, result.op));
  });

  app.get('/v1/runs/:runId/trace', async (c) => {
    const run = await ownRun(c, { allowReviewer: true });
    return c.json({ events: await deps.store.listEvents(run.runId) });
  });

  // The trace for people: the same events as the JSON route, as a timeline page (GET with a bearer key).
  app.get('/v1/runs/:runId/timeline', async (c) => {
    const run = await ownRun(c, { allowReviewer: true });
    const principal = c.get('principal');
    const [events, ops] = await Promise.all([deps.store.listEvents(run.runId), deps.store.listOperationsOfRun(run.runId)]);
    // Owners and admins see the data, masked; a reviewer of someone else's run sees hashes only.
    const seesData = principal.id === run.principalId || hasRole(principal, 'admin');
    const details = seesData
      ? Object.fromEntries(await Promise.all(ops.map(async (op) => [op.operationId, await operationDetails(deps, op)] as const)))
      : {};
    return c.html(timelinePage(timelineModel(events, details), principal.id), 200, PAGE_HEADERS);
  });

  app.get('/v1/metrics', (c) => {
    requireRole(c, 'admin');
    if (!deps.metrics?.snapshot) throw new ApiError(404, 'not_found', 'metrics are published to CloudWatch here, not kept in process');
    return c.json({ metrics: deps.metrics.snapshot() });
  });

  app.get('/v1/tools', async (c) => {
    requireRole(c, 'agent');
    await toolsReady(deps.tools);
    const parsedFormat = ToolFormatSchema.safeParse(c.req.query('format') ?? 'neutral');
    if (!parsedFormat.success) throw new ApiError(400, 'invalid_request', `format must be one of ${ToolFormatSchema.options.join(', ')}`);
    const format: ToolFormat = parsedFormat.data;
    const principal = c.get('principal');
    const visible = new Map([...deps.tools].filter(([name]) => principal.tools === '*' || principal.tools.includes(name)));
    return c.json({ format, tools: describeTools(visible, format) });
  });

  app.get('/v1/approvals', async (c) => {
    requireRole(c, 'approver');
    const query = queryOf(c, ListApprovalsQuerySchema);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, PendingApprovalKeySchema);
    if (query.cursor !== undefined && !after) throw new ApiError(400, 'invalid_request', 'cursor is not one this API handed out');
    const principal = c.get('principal');
    const config = await deps.config();
    const page = await deps.store.listPendingApprovals({
      approverId: principal.id,
      now: new Date(deps.now()).toISOString(),
      limit: query.limit,
      after,
    });
    return c.json({
      approvals: page.items.map((op) => ({
        approvalId: op.approval!.approvalId,
        operationId: op.operationId,
        runId: op.runId,
        toolName: op.toolName,
        arguments: op.frozenArguments ? JSON.parse(op.frozenArguments) : undefined,
        inputHash: op.inputHash,
        requestedBy: requesterOf(op),
        expiresAt: op.approval!.expiresAt,
        ...(op.policies ? { policies: op.policies } : {}),
        url: approvalUrl(deps, config.approvalSecret, op, principal),
      })),
      nextCursor: page.nextKey ? encodeCursor(page.nextKey as Parameters<typeof encodeCursor>[0]) : undefined,
    });
  });

  app.post('/v1/runs/:runId/tool-calls/preview', async (c) => {
    requireRole(c, 'agent');
    const body = await jsonBody(c, PreviewSchema);
    assertArgumentsBounded(body.arguments);
    const run = await ownRun(c);
    if (run.status === 'cancelled') throw new ApiError(409, 'run_closed', 'the run was cancelled');
    return c.json(await previewToolCall(deps, run, c.get('principal'), body));
  });

  app.get('/v1/reviews', async (c) => {
    requireRole(c, 'reviewer');
    if ((c.req.query('status') ?? 'open') !== 'open') throw new ApiError(400, 'invalid_request', 'only status=open is supported');
    return c.json(await openReviews(deps));
  });

  return app;
}

/** Routes anyone may call: health, the API reference, and approval links (they authenticate by signature). */
function publicRoutes(deps: Deps): Hono<Env> {
  const open = new Hono<Env>();

  open.get('/v1/health', (c) => c.json({ status: 'ok' }));

  // RFC 9728 protected-resource metadata: how a client finds the authorization server. For the API, and
  // the path-suffixed form for `/mcp`; not found while no OAuth issuer is configured.
  for (const path of ['', '/mcp'] as const) {
    open.get(`/.well-known/oauth-protected-resource${path}`, async (c) => {
      const config = await deps.config();
      if (!config.oauth) throw new ApiError(404, 'not_found', 'this runner accepts no OAuth access tokens');
      return c.json(protectedResourceMetadata(config, deps.publicBaseUrl, path), 200, { 'Cache-Control': 'max-age=300' });
    });
  }

  // Built on first request, not at start: a cold Lambda that never serves it does not pay for it.
  let reference: Record<string, unknown> | undefined;
  open.get('/v1/openapi.json', (c) => {
    reference ??= openApiDocument();
    return c.json(reference);
  });

  // Approval links authenticate by signature, not bearer key: approvers open them from a notification.
  open.get('/v1/approvals/:approvalId{apr_[A-Za-z0-9_-]+}', async (c) => {
    securePage(c);
    const approvalId = c.req.param('approvalId');
    if (!isSaneId(approvalId)) return c.html(decisionPage('Approval unavailable', 'no such approval'), 404);
    const sig = c.req.query('sig');
    if (sig !== undefined && sig.length > MAX_SIG_CHARS)
      return c.html(decisionPage('Approval unavailable', 'this approval link is not valid'), 403);
    const access = await openApproval(deps, approvalId, sig);
    if (!access.ok) return c.html(decisionPage('Approval unavailable', access.message), access.status);
    return c.html(
      approvalPage(
        access.op,
        access.approver.id,
        sig!,
        `/v1/approvals/${access.op.approval!.approvalId}`,
        deps.tools.get(access.op.toolName),
      ),
    );
  });

  open.post('/v1/approvals/:approvalId{apr_[A-Za-z0-9_-]+}', async (c) => {
    const approvalId = c.req.param('approvalId');
    const isForm = (c.req.header('content-type') ?? '').includes('application/x-www-form-urlencoded');
    securePage(c);
    if (!isSaneId(approvalId)) {
      if (isForm) return c.html(decisionPage('Not decided', 'no such approval'), 404);
      throw new ApiError(404, 'not_found', 'no such approval');
    }
    let input: z.infer<typeof DecisionSchema>;
    if (isForm) {
      const form = await c.req.parseBody();
      const parsed = DecisionSchema.safeParse({ decision: form.decision, reason: form.reason || undefined, sig: form.sig });
      if (!parsed.success) return c.html(decisionPage('Not decided', 'The form was incomplete.'), 400);
      input = parsed.data;
    } else {
      input = await jsonBody(c, DecisionSchema);
    }
    const sig = input.sig ?? c.req.query('sig');
    const result =
      sig !== undefined && sig.length > MAX_SIG_CHARS
        ? ({ ok: false, status: 403, code: 'forbidden', message: 'this approval link is not valid' } as const)
        : await decideApproval(deps, approvalId, sig, input.decision, input.reason);
    if (!result.ok) {
      if (isForm) return c.html(decisionPage('Not decided', result.message), result.status);
      throw new ApiError(result.status, result.code, result.message);
    }
    const state = result.op.approval?.state ?? 'pending';
    if (isForm)
      return c.html(decisionPage(state === 'approved' ? 'Approved' : 'Rejected', `The operation was ${state}. You can close this page.`));
    return c.json({ approvalId, operationId: result.op.operationId, state });
  });

  return open;
}

/** The path patterns a sub-app serves, for `except`: which requests skip a middleware follows from the sub-app. */
function pathsOf(app: Hono<Env>): string[] {
  return [...new Set(app.routes.map((r) => r.path))];
}
