import { Hono } from 'hono';
import { makeApp } from '../api/app';
import { waitingPass } from '../api/long-poll';
import { consoleRoutes } from '../console/routes';
import type { Deps } from '../core/ports';
import { maxWaitSeconds } from '../http/wait';
import { mcpRoutes, mcpWaitMs } from '../mcp/server';

/**
 * Everything the API Lambda (and `npm start`'s HTTP server) serves: the HTTP API v1 and, beside it, the MCP
 * server at `/mcp` and the console for people at `/console`, both of which call that API in-process with
 * their caller's key, so they behave exactly as the API does for that key. Composed here, not inside the
 * API, so the API never depends on what is built on it.
 */
export function makeHttpApp(deps: Deps): Hono {
  const longestWait = maxWaitSeconds();
  const api = makeApp(deps, longestWait);
  const mcp = mcpRoutes({
    api: (request) => api.fetch(request),
    config: () => deps.config(),
    runs: deps.store,
    tools: deps.tools,
    // Read per request: the embedded stack sets it once its port is known, after building this app.
    publicBaseUrl: () => deps.publicBaseUrl,
    waitMs: Math.min(mcpWaitMs(), longestWait * 1000),
    // The API's own bound on idle waits: MCP's wait after a submission is one.
    idleWait: (operationId, seconds) => waitingPass(deps, operationId, seconds),
    now: () => deps.now(),
  });
  const people = consoleRoutes({
    api: (request) => api.fetch(request),
    config: () => deps.config(),
    tools: deps.tools,
    publicBaseUrl: () => deps.publicBaseUrl,
    now: () => deps.now(),
    overview: deps.store,
  });
  const root = new Hono();
  root.all('/mcp', (c) => mcp.fetch(c.req.raw, c.env));
  root.all('/console', (c) => people.fetch(c.req.raw, c.env));
  root.all('/console/*', (c) => people.fetch(c.req.raw, c.env));
  // `c.env` carries the Lambda event and context (hono/aws-lambda) through to the API's handlers.
  root.all('*', (c) => api.fetch(c.req.raw, c.env));
  return root;
}
