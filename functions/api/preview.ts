import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { argumentsHash, previewCall } from '../core/call-policy';
import { parseArguments } from '../core/canonical';
import type { Principal } from '../core/model';
import { hasRole } from '../core/policy';
import type { Deps } from '../core/ports';
import { principalIn } from '../steps/deps';
import { toolsReady } from '../tools/mcp-upstream';

type Env = { Variables: { principal: Principal } };

const PreviewSchema = z.strictObject({
  name: z.string().min(1).max(128),
  arguments: z.union([z.record(z.string(), z.unknown()), z.string().max(256 * 1024)]),
  /** The turn the call would belong to; by default the run's current turn (no new turn is opened). */
  turn: z.number().int().min(0).max(1_000_000).optional(),
});

const error = (c: Context, status: 400 | 403 | 404 | 409, code: string, message: string) => c.json({ error: { code, message } }, status);

/**
 * `POST /v1/runs/{runId}/tool-calls/preview`: the policy decision submission would take for this call,
 * from the same pure function, with no operation, no attempt and no budget used. Mounted after the
 * API's bearer-key middleware, which sets the principal.
 */
export function previewRoutes(deps: Deps): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/v1/runs/:runId/tool-calls/preview', async (c) => {
    const principal = c.get('principal');
    if (!hasRole(principal, 'agent')) return error(c, 403, 'forbidden', 'this route needs the agent role');
    const run = await deps.store.getRun(c.req.param('runId'));
    if (!run) return error(c, 404, 'not_found', 'no such run');
    if (run.principalId !== principal.id && !hasRole(principal, 'admin')) return error(c, 403, 'forbidden', 'this run belongs to another principal');
    const body = PreviewSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success) return error(c, 400, 'invalid_request', body.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
    if (run.status === 'cancelled') return error(c, 409, 'run_closed', 'the run was cancelled');

    const config = await deps.config();
    await toolsReady(deps.tools);
    const parsed = parseArguments(body.data.arguments);
    const decision = previewCall({
      tool: deps.tools.get(body.data.name),
      toolName: body.data.name,
      // The caller is the principal submission will check (an admin may submit into another's run).
      principal: principalIn(config, principal.id),
      arguments: parsed,
      approvalTtlSeconds: config.approvalTtlSeconds,
      run,
      now: deps.now(),
      turn: body.data.turn ?? Math.max(run.lastTurn, 1),
    });
    return c.json({
      decision: decision.decision,
      ...(decision.decision === 'deny' ? { code: decision.code } : {}),
      message: decision.message,
      inputHash: argumentsHash(parsed, body.data.arguments),
    });
  });
  return app;
}
