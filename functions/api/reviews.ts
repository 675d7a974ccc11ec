import { Hono } from 'hono';
import type { Principal } from '../core/model';
import { hasRole } from '../core/policy';
import type { Deps } from '../steps/deps';

type Env = { Variables: { principal: Principal } };

const MAX_REVIEWS = 200;

/**
 * `GET /v1/reviews?status=open`: every operation waiting for a person's resolution, so the
 * "request_human_review" an envelope offers leads somewhere. Mounted after the bearer-key middleware.
 */
export function reviewRoutes(deps: Deps): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/v1/reviews', async (c) => {
    if (!hasRole(c.get('principal'), 'reviewer')) return c.json({ error: { code: 'forbidden', message: 'this route needs the reviewer role' } }, 403);
    if ((c.req.query('status') ?? 'open') !== 'open') return c.json({ error: { code: 'invalid_request', message: 'only status=open is supported' } }, 400);
    const open = await deps.store.listOpenReviews(MAX_REVIEWS);
    return c.json({
      reviews: open.map((op) => ({
        operationId: op.operationId,
        runId: op.runId,
        toolName: op.toolName,
        reason: op.review?.reason ?? 'the outcome is unknown',
        // The index orders by updatedAt; an open review is not written again until someone resolves it.
        since: op.updatedAt,
        resolveUrl: `/v1/operations/${op.operationId}/resolve`,
      })),
    });
  });
  return app;
}
