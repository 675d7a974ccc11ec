import { argumentsForApprover } from '../core/approval-view';
import { requesterOf } from '../core/record-predicates';
import { describeTools, type ToolFormat } from '../core/tool-spec';
import { approvalUrl } from '../steps/approval';
import { toolsReady } from '../tools/mcp-upstream';
import { ListApprovalsQuerySchema, ToolFormatSchema } from '../http/schemas';
import { ApiError } from './api-error';
import { decodeCursor, encodeCursor, PendingApprovalKeySchema } from './cursor';
import { queryOf } from './request-input';
import type { RouteHandlers } from './route-call';
import { openReviews } from './reviews';

/** What a caller's role lets it list: its tools, the approvals it may decide, open reviews, this process's metrics. */
export const directoryHandlers = {
  getMetrics: ({ c, deps }) => {
    if (!deps.metrics?.snapshot) throw new ApiError(404, 'not_found', 'metrics are published to CloudWatch here, not kept in process');
    return c.json({ metrics: deps.metrics.snapshot() });
  },

  listTools: async ({ c, deps }) => {
    await toolsReady(deps.tools);
    const parsedFormat = ToolFormatSchema.safeParse(c.req.query('format') ?? 'neutral');
    if (!parsedFormat.success) throw new ApiError(400, 'invalid_request', `format must be one of ${ToolFormatSchema.options.join(', ')}`);
    const format: ToolFormat = parsedFormat.data;
    const principal = c.get('principal');
    const visible = new Map([...deps.tools].filter(([name]) => principal.tools === '*' || principal.tools.includes(name)));
    return c.json({ format, tools: describeTools(visible, format) });
  },

  listApprovals: async ({ c, deps }) => {
    const query = queryOf(c, ListApprovalsQuerySchema);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, PendingApprovalKeySchema);
    if (query.cursor !== undefined && !after) throw new ApiError(400, 'invalid_request', 'cursor is not one this API handed out');
    const principal = c.get('principal');
    const config = await deps.config();
    // Without the tools' description the secret fields are unknown: no argumentFields then (arguments stay as they were).
    const described = await toolsReady(deps.tools).then(
      () => true,
      () => false,
    );
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
        ...(op.approvalLines?.length ? { summary: op.approvalLines } : {}),
        ...(described && op.frozenArguments
          ? {
              argumentFields: argumentsForApprover(
                JSON.parse(op.frozenArguments),
                op.secretFields ?? deps.tools.get(op.toolName)?.secretFields,
              ),
            }
          : {}),
        url: approvalUrl(deps, config.approvalSecret, op, principal),
        ...(op.approval!.escalations?.length ? { escalations: op.approval!.escalations } : {}),
      })),
      nextCursor: page.nextKey ? encodeCursor(page.nextKey as Parameters<typeof encodeCursor>[0]) : undefined,
    });
  },

  listReviews: async ({ c, deps }) => {
    if ((c.req.query('status') ?? 'open') !== 'open') throw new ApiError(400, 'invalid_request', 'only status=open is supported');
    return c.json(await openReviews(deps));
  },
} satisfies Partial<RouteHandlers>;
