import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { except } from 'hono/combine';
import type { Deps } from '../core/ports';
import { authenticateBearer, bearerChallenge, bearerKeyOf } from '../http/authenticate';
import { bodySizeLimit } from '../http/body-limit';
import { MAX_BODY_BYTES } from '../http/schemas';
import { LONGEST_WAIT_SECONDS } from '../http/wait';
import { requireRoles } from './access';
import { ApiError } from './api-error';
import { logOf } from '../core/log';
import { ToolsUnavailableError } from '../core/errors';

const TOOLS_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;
import { directoryHandlers } from './directory-routes';
import { operationHandlers } from './operation-routes';
import { publicHandlers } from './public-routes';
import { jsonBody } from './request-input';
import type { Env, Handler, RouteCall, RouteHandlers } from './route-call';
import { honoPath, REQUESTS, ROUTE_TABLE, type RouteName, type RouteSpec } from './route-table';
import { runHandlers } from './run-routes';
import { toolCallHandlers } from './tool-call-route';
import { modelCallHandlers } from './model-call-routes';
import { slackHandlers } from './slack-routes';

export { MAX_BODY_BYTES };

const HANDLERS: RouteHandlers = {
  ...publicHandlers,
  ...runHandlers,
  ...toolCallHandlers,
  ...modelCallHandlers,
  ...operationHandlers,
  ...directoryHandlers,
  ...slackHandlers,
};

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
    // Nothing was decided or run: the agent sends the same call again (same callId) a little later.
    if (error instanceof ToolsUnavailableError)
      return c.json({ error: { code: 'tools_unavailable', message: error.message } }, 503, {
        'Retry-After': String(TOOLS_UNAVAILABLE_RETRY_AFTER_SECONDS),
      });
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

  const routes = Object.entries(ROUTE_TABLE) as [RouteName, RouteSpec][];
  const register = (target: Hono<Env>, name: RouteName, route: RouteSpec) =>
    target.on(route.method.toUpperCase(), honoPath(route), (c) =>
      serve(c, deps, longestWaitSeconds, route, HANDLERS[name] as Handler<unknown>),
    );

  // Routes that skip authentication live on their own sub-app; only its paths are exempt from the bearer check.
  const open = new Hono<Env>();
  for (const [name, route] of routes) if (typeof route.access !== 'object') register(open, name, route);
  app.route('/', open);

  const authenticate: MiddlewareHandler<Env> = async (c, next) => {
    const bearer = bearerKeyOf(c.req.header('authorization'));
    const who = bearer ? await authenticateBearer(await deps.config(), bearer, deps.publicBaseUrl) : undefined;
    if (!who) throw new ApiError(401, 'unauthenticated', 'a valid bearer key or access token is required');
    c.set('principal', who.principal);
    await next();
  };
  app.use('/v1/*', except(pathsOf(open), authenticate));

  for (const [name, route] of routes) if (typeof route.access === 'object') register(app, name, route);
  return app;
}

/** One request to one route: the role check the table declares, then the handler with the route's body schema. */
function serve(c: Context<Env>, deps: Deps, longestWaitSeconds: number, route: RouteSpec, handler: Handler<unknown>) {
  const access = typeof route.access === 'object' ? route.access : undefined;
  if (access?.check === 'caller') requireRoles(c.get('principal'), access.roles);
  const call: RouteCall<unknown> = {
    c,
    deps,
    roles: access?.roles ?? [],
    longestWaitSeconds,
    body: () =>
      route.body ? jsonBody<unknown>(c, REQUESTS[route.body], route.bodyOptional) : Promise.reject(new Error('this route takes no body')),
  };
  return handler(call);
}

/** The path patterns a sub-app serves, for `except`: which requests skip a middleware follows from the sub-app. */
function pathsOf(app: Hono<Env>): string[] {
  return [...new Set(app.routes.map((r) => r.path))];
}
