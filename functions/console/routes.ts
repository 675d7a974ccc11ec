import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { bodySizeLimit } from '../http/body-limit';
import { authenticateBearer } from '../http/authenticate';
import { PAGE_SECURITY_HEADERS } from '../html/page-basics';
import { timelineMainOf } from '../html/timeline-page';
import { createClient, ToolRunnerError, type ToolRunnerClient } from '../client';
import { isSaneId } from '../core/json-bounds';
import { hasRole } from '../core/policy';
import type { ConfigSource } from '../core/ports';
import { type ToolRegistry, toolsReady } from '../core/tool-spec';
import {
  approvalsPage,
  type Banner,
  loginPage,
  mayListRuns,
  messagePage,
  RUN_STATUSES,
  reviewsPage,
  runPage,
  runsPage,
  type Viewer,
} from './pages';
import { checkFormOrigin, cookieIsSecure, requestSite } from './request-checks';
import {
  csrfToken,
  csrfTokenMatches,
  issueSession,
  issueTokenSession,
  MAX_SESSION_TOKEN_CHARS,
  SESSION_LIFETIME_SECONDS,
  verifySession,
} from './session';
import { defaultLog } from '../core/log';
import { DEFAULT_RETENTION_DAYS } from '../commands/submit';
import { type OverviewStore, overviewPage, readOverview } from './overview';

export interface ConsoleOptions {
  /** The runner's own API, called in-process with the signed-in principal's key: the console can do what the key can. */
  api: (request: Request) => Response | Promise<Response>;
  /** The principals (keys, roles) and the secret the session cookies' key is derived from. */
  config: ConfigSource;
  /** The registered tools, for their summaries for people (amounts in their currency). */
  tools: ToolRegistry;
  /** The API's public URL, read per request (the embedded stack learns its port after building the app). */
  publicBaseUrl: () => string;
  now?: () => number;
  /** Where the overview reads its rollups and what waits for people; without it the console has no overview. */
  overview?: OverviewStore;
}

/** `__Host-`: only this host may set it, over TLS, for the whole path. Plain HTTP on loopback cannot carry that prefix. */
const SECURE_COOKIE = '__Host-toolrunner-console';
const LOOPBACK_COOKIE = 'toolrunner-console';
const RUNS_PER_PAGE = 25;
const FORM_BYTES = 64 * 1024;

const DecisionForm = z.object({ decision: z.enum(['approve', 'reject']), reason: z.string().max(500).optional() });
const ResolutionForm = z.object({ outcome: z.enum(['succeeded', 'failed']), note: z.string().trim().min(1).max(2000) });
const RunsQuery = z.object({ status: z.enum(RUN_STATUSES).optional(), cursor: z.string().min(1).max(512).optional() });

interface SignedIn {
  viewer: Viewer;
  /** The runner's API as this principal. */
  client: ToolRunnerClient;
  key: string;
  /** Whether a form's `csrf` field is this session's token. */
  ownsForm(token: unknown): boolean;
}

/**
 * The console for people, under `/console`: sign in with a key, decide approvals, resolve reviews, find runs
 * and read their timelines, with plain HTML forms (no JavaScript). It holds no state: a session is a signed
 * cookie (console/session.ts), and every action is a request to the runner's own API with the principal's
 * key, so a person can do exactly what that key may do, under the API's rules. Forms are CSRF-safe three
 * ways: the cookie is SameSite=Strict, each form carries the session's token, and the browser's `Origin`
 * must be the console's own.
 */
export function consoleRoutes(options: ConsoleOptions): Hono {
  const now = options.now ?? Date.now;
  const app = new Hono();

  app.use('*', async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
    for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) c.header(name, value);
  });
  app.use(
    '*',
    bodySizeLimit(FORM_BYTES, (c) => c.html(messagePage('Too large', 'That form is larger than the console accepts.'), 413)),
  );
  app.onError((error, c) => {
    defaultLog().error('unhandled console error', { error: error.name, detail: error.message });
    return c.html(messagePage('Something went wrong', 'The console could not answer this request. Try again in a moment.'), 500);
  });
  app.notFound((c) => c.html(messagePage('Not found', 'There is no such page in the console.'), 404));

  const cookieName = (c: Context) => (cookieIsSecure(requestSite(c, options.publicBaseUrl())) ? SECURE_COOKIE : LOOPBACK_COOKIE);

  /** The session the request's cookie carries, with a client that acts as its principal; undefined if none is valid. */
  async function signedIn(c: Context): Promise<SignedIn | undefined> {
    const config = await options.config();
    const found = verifySession(config, getCookie(c, cookieName(c)), now());
    if (!found) return undefined;
    const { session } = found;
    // A token session acts with its token, checked again now (a principal mapping or a key set may have changed).
    const authenticated =
      found.kind === 'key'
        ? { principal: found.principal, bearer: found.principal.key }
        : await authenticateBearer(config, found.token, options.publicBaseUrl()).then((who) =>
            who && who.principal.id === session.principalId ? { principal: who.principal, bearer: found.token } : undefined,
          );
    if (!authenticated) return undefined;
    const { principal, bearer } = authenticated;
    const client = createClient({
      baseUrl: 'http://runner.internal',
      apiKey: bearer,
      fetch: (url, init) => options.api(new Request(url, init)),
    });
    return {
      viewer: {
        principal: { id: principal.id, roles: principal.roles, tools: principal.tools },
        csrf: csrfToken(config.approvalSecret, session),
      },
      client,
      key: bearer,
      ownsForm: (token) => csrfTokenMatches(config.approvalSecret, session, token),
    };
  }

  /** A form POST: from this console (Origin), by a signed-in person, carrying that session's token. */
  async function formPost(
    c: Context,
  ): Promise<{ ok: true; who: SignedIn; form: Record<string, string> } | { ok: false; response: Response }> {
    const origin = checkFormOrigin(c, options.publicBaseUrl());
    if (!origin.ok)
      return { ok: false, response: c.html(messagePage('Refused', `This form was not sent from the console (${origin.reason}).`), 403) };
    const who = await signedIn(c);
    if (!who)
      return {
        ok: false,
        response: c.html(messagePage('Signed out', 'Your session has ended. Sign in again, then repeat what you did.'), 403),
      };
    const form = await textFields(c);
    if (!who.ownsForm(form.csrf))
      return {
        ok: false,
        response: c.html(
          messagePage('Refused', 'This form does not belong to your session. Reload the page and try again.', who.viewer),
          403,
        ),
      };
    return { ok: true, who, form };
  }

  /** Where a person with these roles starts. */
  const home = (viewer: Viewer) =>
    hasRole(viewer.principal, 'approver')
      ? '/console/approvals'
      : hasRole(viewer.principal, 'reviewer')
        ? '/console/reviews'
        : mayListRuns(viewer.principal)
          ? '/console/runs'
          : '/console/nothing';

  for (const path of ['/console', '/console/'])
    app.get(path, async (c) => {
      const who = await signedIn(c);
      return c.redirect(who ? home(who.viewer) : '/console/login', 303);
    });

  app.get('/console/nothing', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    return c.html(
      messagePage('Nothing here for you', 'Your key has no role the console serves (approver, reviewer, agent or admin).', who.viewer),
      403,
    );
  });

  app.get('/console/login', async (c) => {
    const who = await signedIn(c);
    if (who) return c.redirect(home(who.viewer), 303);
    return c.html(loginPage());
  });

  app.post('/console/login', async (c) => {
    const origin = checkFormOrigin(c, options.publicBaseUrl());
    if (!origin.ok) return c.html(messagePage('Refused', `This form was not sent from the console (${origin.reason}).`), 403);
    const form = await textFields(c);
    const config = await options.config();
    const key = typeof form.key === 'string' && form.key.length <= MAX_SESSION_TOKEN_CHARS ? form.key.trim() : '';
    const who = key ? await authenticateBearer(config, key, options.publicBaseUrl()) : undefined;
    if (!who) return c.html(loginPage('That key or token is not valid.'), 401);
    // A key the document holds in plain text: a session bound to it (it ends when the key changes). A token, or a
    // key the document holds only as its hash: a session that carries it and checks it again on every request.
    const entry = who.expiresAt ? undefined : config.principals.find((p) => p.id === who.principal.id && p.key === key);
    const value =
      entry?.key !== undefined
        ? issueSession(config.approvalSecret, { id: entry.id, key: entry.key }, now())
        : issueTokenSession(config.approvalSecret, who.principal.id, key, who.expiresAt ?? now() + SESSION_LIFETIME_SECONDS * 1000, now());
    setCookie(c, cookieName(c), value, {
      path: '/',
      httpOnly: true,
      secure: cookieName(c) === SECURE_COOKIE,
      sameSite: 'Strict',
      // A token session's cookie ends with its token.
      maxAge: who.expiresAt
        ? Math.max(1, Math.min(SESSION_LIFETIME_SECONDS, Math.floor((who.expiresAt - now()) / 1000)))
        : SESSION_LIFETIME_SECONDS,
    });
    return c.redirect('/console', 303);
  });

  app.post('/console/logout', async (c) => {
    const checked = await formPost(c);
    if (!checked.ok) return checked.response;
    deleteCookie(c, cookieName(c), { path: '/', secure: cookieName(c) === SECURE_COOKIE });
    return c.redirect('/console/login', 303);
  });

  app.get('/console/approvals', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    return approvals(c, who, decidedBanner(c.req.query('decided'), c.req.query('op')));
  });

  async function approvals(c: Context, who: SignedIn, note?: Banner, status: ContentfulStatusCode = 200): Promise<Response> {
    if (!hasRole(who.viewer.principal, 'approver'))
      return c.html(messagePage('Approvals', 'Your key has no approver role.', who.viewer), 403);
    const list = await who.client.listApprovals();
    await toolsReady(options.tools);
    return c.html(
      approvalsPage(who.viewer, list, (name) => options.tools.get(name), note),
      status,
    );
  }

  app.post('/console/approvals/:operationId', async (c) => {
    const checked = await formPost(c);
    if (!checked.ok) return checked.response;
    const { who, form } = checked;
    const parsed = DecisionForm.safeParse({ decision: form.decision, reason: form.reason || undefined });
    if (!parsed.success) return approvals(c, who, { kind: 'error', text: 'Choose Approve or Reject.' }, 400);
    const operationId = c.req.param('operationId');
    try {
      const decided =
        parsed.data.decision === 'approve'
          ? await who.client.approve(operationId, { reason: parsed.data.reason })
          : await who.client.reject(operationId, { reason: parsed.data.reason });
      return c.redirect(
        `/console/approvals?decided=${encodeURIComponent(decided.state)}&op=${encodeURIComponent(decided.operationId)}`,
        303,
      );
    } catch (error) {
      if (!(error instanceof ToolRunnerError) || error.status < 400 || error.status >= 500) throw error;
      return approvals(c, who, { kind: 'error', text: `Not decided: ${error.message}.` }, error.status as ContentfulStatusCode);
    }
  });

  app.get('/console/reviews', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    return reviews(c, who, resolvedBanner(c.req.query('resolved'), c.req.query('op')));
  });

  async function reviews(c: Context, who: SignedIn, note?: Banner, status: ContentfulStatusCode = 200): Promise<Response> {
    if (!hasRole(who.viewer.principal, 'reviewer'))
      return c.html(messagePage('Reviews', 'Your key has no reviewer role.', who.viewer), 403);
    return c.html(reviewsPage(who.viewer, await who.client.listReviews(), note), status);
  }

  app.post('/console/reviews/:operationId', async (c) => {
    const checked = await formPost(c);
    if (!checked.ok) return checked.response;
    const { who, form } = checked;
    const parsed = ResolutionForm.safeParse({ outcome: form.outcome, note: form.note ?? '' });
    if (!parsed.success) return reviews(c, who, { kind: 'error', text: 'Write what you found, then choose succeeded or failed.' }, 400);
    const operationId = c.req.param('operationId');
    try {
      const op = await who.client.resolveReview(operationId, parsed.data);
      return c.redirect(
        `/console/reviews?resolved=${encodeURIComponent(parsed.data.outcome)}&op=${encodeURIComponent(op.operationId)}`,
        303,
      );
    } catch (error) {
      if (!(error instanceof ToolRunnerError) || error.status < 400 || error.status >= 500) throw error;
      return reviews(c, who, { kind: 'error', text: `Not resolved: ${error.message}.` }, error.status as ContentfulStatusCode);
    }
  });

  app.get('/console/runs', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    if (!mayListRuns(who.viewer.principal)) return c.html(messagePage('Runs', 'Your key may not list runs.', who.viewer), 403);
    const query = RunsQuery.safeParse({ status: c.req.query('status') || undefined, cursor: c.req.query('cursor') || undefined });
    if (!query.success) return c.html(messagePage('Runs', 'That is not a page of runs this console handed out.', who.viewer), 400);
    try {
      const page = await who.client.listRuns({ ...query.data, limit: RUNS_PER_PAGE });
      return c.html(runsPage(who.viewer, page, query.data));
    } catch (error) {
      if (!(error instanceof ToolRunnerError) || error.status !== 400) throw error;
      return c.html(messagePage('Runs', 'That is not a page of runs this console handed out.', who.viewer), 400);
    }
  });

  app.get('/console/overview', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    if (!hasRole(who.viewer.principal, 'reviewer'))
      return c.html(messagePage('Overview', 'The overview is for reviewers and admins.', who.viewer), 403);
    if (!options.overview) return c.html(messagePage('Overview', 'This runner keeps no overview.', who.viewer), 404);
    const config = await options.config();
    const figures = await readOverview(options.overview, now(), c.req.query('window'), config.retentionDays ?? DEFAULT_RETENTION_DAYS);
    return c.html(overviewPage(who.viewer, figures));
  });

  app.get('/console/runs/:runId', async (c) => {
    const who = await signedIn(c);
    if (!who) return c.redirect('/console/login', 303);
    const runId = c.req.param('runId');
    if (!isSaneId(runId)) return c.html(messagePage('Run', 'There is no such run.', who.viewer), 404);
    // The API's own timeline page: what this key may see of the run (data for owners and admins, hashes for
    // reviewers of another's run) is decided there, once.
    const res = await options.api(
      new Request(`http://runner.internal/v1/runs/${encodeURIComponent(runId)}/timeline`, {
        headers: { authorization: `Bearer ${who.key}` },
      }),
    );
    const text = await res.text();
    const timeline = res.ok ? timelineMainOf(text) : undefined;
    if (timeline) return c.html(runPage(who.viewer, runId, timeline));
    const message =
      res.status === 404
        ? 'There is no such run.'
        : res.status === 403
          ? 'This run belongs to another principal.'
          : 'The timeline could not be read.';
    return c.html(messagePage(`Run ${runId}`, message, who.viewer), (res.ok ? 500 : res.status) as ContentfulStatusCode);
  });

  return app;
}

/** A form's text fields; file parts are dropped. */
async function textFields(c: Context): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  if (!type.includes('application/x-www-form-urlencoded') && !type.includes('multipart/form-data')) return {};
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The banner after a decision: built from the redirect's fixed words and a well-formed id only, so a link cannot put words on the page. */
function decidedBanner(decided: string | undefined, op: string | undefined): Banner | undefined {
  if ((decided !== 'approved' && decided !== 'rejected') || !op || !isSaneId(op)) return undefined;
  return { kind: 'done', text: `${decided === 'approved' ? 'Approved' : 'Rejected'} ${op}.` };
}

function resolvedBanner(resolved: string | undefined, op: string | undefined): Banner | undefined {
  if ((resolved !== 'succeeded' && resolved !== 'failed') || !op || !isSaneId(op)) return undefined;
  return { kind: 'done', text: `Recorded ${op} as ${resolved}.` };
}
