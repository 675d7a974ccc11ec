import type { Context } from 'hono';
import type { z } from 'zod';
import { isSaneId } from '../core/json-bounds';
import { decideApproval, openApproval } from '../commands/approval-decisions';
import { approvalPage, decisionPage } from '../html/approval-page';
import { PAGE_SECURITY_HEADERS } from '../html/page-basics';
import { protectedResourceMetadata } from '../http/authenticate';
import { DecisionSchema } from '../http/schemas';
import { ApiError } from './api-error';
import { openApiDocument } from './openapi';
import type { Handler, RouteHandlers } from './route-call';

const MAX_SIG_CHARS = 2000;

/** Approval pages show untrusted text: no scripts, no framing, no referrer carrying the signed link. */
function securePage(c: Context): void {
  c.header('Cache-Control', 'no-store');
  for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) c.header(name, value);
}

// RFC 9728 protected-resource metadata: how a client finds the authorization server. For the API, and
// the path-suffixed form for `/mcp`; not found while no OAuth issuer is configured.
const protectedResource =
  (path: '' | '/mcp'): Handler =>
  async ({ c, deps }) => {
    const config = await deps.config();
    if (!config.oauth) throw new ApiError(404, 'not_found', 'this runner accepts no OAuth access tokens');
    return c.json(protectedResourceMetadata(config, deps.publicBaseUrl, path), 200, { 'Cache-Control': 'max-age=300' });
  };

// Built on first request, not at start: a cold Lambda that never serves it does not pay for it.
let reference: Record<string, unknown> | undefined;

/** Routes anyone may call: health, the API reference, and approval links (they authenticate by signature). */
export const publicHandlers = {
  health: ({ c }) => c.json({ status: 'ok' }),

  protectedResource: protectedResource(''),
  protectedResourceMcp: protectedResource('/mcp'),

  openApi: ({ c }) => {
    reference ??= openApiDocument();
    return c.json(reference);
  },

  // Approval links authenticate by signature, not bearer key: approvers open them from a notification.
  approvalPage: async ({ c, deps }) => {
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
  },

  approvalLinkDecision: async ({ c, deps, body }) => {
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
      input = await body();
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
  },
} satisfies Partial<RouteHandlers>;
