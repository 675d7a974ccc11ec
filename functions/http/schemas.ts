import { z } from 'zod';
import { OperationState } from '../core/lifecycle';
import { TOOL_FORMATS } from '../core/provider-shapes';

/**
 * The API's shapes in one place: the request schemas validate what the routes accept (`app.ts`), and with
 * the response schemas they generate the OpenAPI document (`openapi.ts`) and check answers in the typed
 * client (`functions/client`). Response schemas are loose objects: a newer runner may add fields.
 */

export const MAX_BODY_BYTES = 256 * 1024;

export const BudgetsSchema = z.strictObject({
  maxTurns: z.number().int().min(1).max(10_000).optional(),
  maxToolCalls: z.number().int().min(1).max(100_000).optional(),
  maxWallClockSeconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 86400)
    .optional(),
  maxSpendCents: z.number().int().min(0).max(1_000_000_000).optional(),
  /** The loop fuse: refuse (`loop_detected`) a call whose tool and arguments match this many earlier calls of the run. */
  maxIdenticalCalls: z.number().int().min(1).max(100_000).optional(),
});
export const CreateRunSchema = z.strictObject({
  budgets: BudgetsSchema.optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export const ToolCallSchema = z.strictObject({
  callId: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[\x21-\x7e]+$/, 'callId must be printable ASCII without spaces'),
  turn: z.number().int().min(0).max(1_000_000),
  name: z.string().min(1).max(128),
  arguments: z.union([z.record(z.string(), z.unknown()), z.string().max(MAX_BODY_BYTES)]),
});
/** The body of `POST /v1/runs/{runId}/model-calls`: a reservation before one model call. */
export const ModelCallSchema = z.strictObject({
  requestId: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[\x21-\x7e]+$/, 'requestId must be printable ASCII without spaces'),
  model: z
    .string()
    .max(300)
    .regex(/^[^/\s]+\/\S+$/, 'model is "<provider>/<model>"'),
  maxOutputTokens: z.number().int().min(1).max(10_000_000),
  inputTokens: z.number().int().min(0).max(100_000_000).optional(),
});
/** The body of `POST /v1/runs/{runId}/model-calls/{modelCallId}/usage`: what the call used (cached tokens are part of input tokens). */
export const ModelCallUsageSchema = z
  .strictObject({
    inputTokens: z.number().int().min(0).max(100_000_000),
    outputTokens: z.number().int().min(0).max(100_000_000),
    cachedInputTokens: z.number().int().min(0).max(100_000_000).optional(),
  })
  .refine((u) => (u.cachedInputTokens ?? 0) <= u.inputTokens, {
    message: 'cachedInputTokens are part of inputTokens: at most inputTokens',
    path: ['cachedInputTokens'],
  });
export const ResolveSchema = z.strictObject({ outcome: z.enum(['succeeded', 'failed']), note: z.string().min(1).max(2000) });
export const DecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  reason: z.string().max(500).optional(),
  sig: z.string().min(1).max(2000).optional(),
});

/** `POST /v1/operations/{operationId}/approval`: the signed link's decision, made with an approver's key. */
export const ApprovalDecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  reason: z.string().max(500).optional(),
});

export const RunStatusSchema = z.enum(['open', 'cancelled', 'budget_exhausted', 'expired']);

/** A page size in a query string: digits only, 1 to 100, default 50. */
export const PageLimitSchema = z
  .string()
  .regex(/^\d{1,3}$/, 'limit must be an integer from 1 to 100')
  .transform(Number)
  .pipe(z.number().int().min(1, 'limit must be an integer from 1 to 100').max(100, 'limit must be an integer from 1 to 100'))
  .optional()
  .default(50);

/** `GET /v1/approvals?status=pending&limit=&cursor=`. */
export const ListApprovalsQuerySchema = z.object({
  status: z.literal('pending', 'only status=pending is supported').optional(),
  limit: PageLimitSchema,
  cursor: z.string().min(1).max(512).optional(),
});

/** `GET /v1/runs?status=&limit=&cursor=`. */
export const ListRunsQuerySchema = z.object({
  status: RunStatusSchema.optional(),
  limit: PageLimitSchema,
  cursor: z.string().min(1).max(512).optional(),
});

export const PreviewSchema = z.strictObject({
  name: z.string().min(1).max(128),
  arguments: z.union([z.record(z.string(), z.unknown()), z.string().max(MAX_BODY_BYTES)]),
  /** The turn the call would belong to; by default the run's current turn (no new turn is opened). */
  turn: z.number().int().min(0).max(1_000_000).optional(),
});

/** The body of `POST /v1/runs`: optional budgets (`maxTurns`, `maxToolCalls`, `maxWallClockSeconds`, `maxSpendCents`) and metadata. */
export type CreateRunBody = z.input<typeof CreateRunSchema>;
export type ToolCallBody = z.input<typeof ToolCallSchema>;
export type ResolveBody = z.input<typeof ResolveSchema>;

export const ToolFormatSchema = z.enum(TOOL_FORMATS);

export const ErrorSchema = z.looseObject({ error: z.looseObject({ code: z.string(), message: z.string() }) });

/** A model call reserved: its id and the cents held for it. */
export const ModelCallReservedSchema = z.looseObject({ modelCallId: z.string(), reservedCents: z.number() });
/** A reservation that does not fit: nothing was reserved and the run stays open (a smaller request may fit). */
export const ModelCallRefusedSchema = z.looseObject({
  status: z.literal('refused'),
  code: z.enum(['budget_exhausted', 'spend_limit']),
  message: z.string(),
});
/** A model call settled: what it reserved and what it was charged. */
export const ModelCallSettledSchema = z.looseObject({
  modelCallId: z.string(),
  status: z.literal('settled'),
  model: z.string(),
  reservedCents: z.number(),
  chargedCents: z.number(),
});

export const HealthSchema = z.looseObject({ status: z.literal('ok') });

const UsageSchema = z.looseObject({
  turns: z.number(),
  toolCalls: z.number(),
  spendCents: z.number(),
  modelSpendCents: z.number(),
  toolSpendCents: z.number(),
  wallClockSeconds: z.number(),
});

export const RunSchema = z.looseObject({
  runId: z.string(),
  status: RunStatusSchema,
  budgets: z.looseObject({
    maxTurns: z.number(),
    maxToolCalls: z.number(),
    maxWallClockSeconds: z.number(),
    maxSpendCents: z.number(),
    maxIdenticalCalls: z.number().optional(),
  }),
  usage: UsageSchema,
  metadata: z.record(z.string(), z.unknown()).optional(),
  createdAt: z.string(),
  /** The run's last change: an admitted call, or its status. */
  updatedAt: z.string(),
  deadlineAt: z.string(),
});

/** One run in the runs list: `owner` is the principal that created it. */
export const RunSummarySchema = z.looseObject({
  runId: z.string(),
  status: RunStatusSchema,
  owner: z.string(),
  createdAt: z.string(),
  usage: UsageSchema,
});
export const RunsSchema = z.looseObject({ runs: z.array(RunSummarySchema), nextCursor: z.string().optional() });

/** The only thing the model sees. */
export const EnvelopeSchema = z.looseObject({
  status: z.enum(['succeeded', 'rejected', 'failed', 'outcome_unknown', 'budget_exhausted', 'cancelled']),
  code: z.string().optional(),
  call_id: z.string(),
  logical_operation_id: z.string(),
  message: z.string(),
  result: z.unknown().optional().describe("Only when succeeded, up to the tool's maxResultBytes (default 256 KiB)."),
  result_omitted: z
    .strictObject({ bytes: z.number().int(), sha256: z.string() })
    .optional()
    .describe(
      "Succeeded, but the result is over the tool's maxResultBytes: its size and hash (sha256:<hex> of its canonical JSON) instead.",
    ),
  allowed_next_actions: z.array(z.string()),
});

/** The `@id`s of the policies that decided a call (docs/policies.md). */
export const PolicyIdsSchema = z.strictObject({ call: z.array(z.string()), unattended: z.array(z.string()).optional() });

/** A call that is not reported yet: it waits for a person or took longer than `Prefer: wait`. */
export const PendingSchema = z.looseObject({
  operationId: z.string(),
  state: z.enum(Object.values(OperationState) as [OperationState, ...OperationState[]]),
  statusUrl: z.string(),
});

export const OperationSchema = z.looseObject({
  operationId: z.string(),
  runId: z.string(),
  callId: z.string(),
  turn: z.number(),
  toolName: z.string(),
  state: z.enum(Object.values(OperationState) as [OperationState, ...OperationState[]]),
  risk: z.enum(['read', 'reversible_write', 'irreversible_write']).optional(),
  inputHash: z.string(),
  /** Where configured policies decided the call: their determining ids (docs/policies.md). */
  policies: PolicyIdsSchema.optional(),
  idempotencyKey: z.string().optional().describe('Only for reviewers and admins, who look an effect up upstream by it; never for agents.'),
  attempts: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  approval: z
    .looseObject({
      approvalId: z.string(),
      state: z.enum(['pending', 'approved', 'rejected', 'expired']),
      expiresAt: z.string(),
      decidedBy: z.string().optional(),
      decidedAt: z.string().optional(),
    })
    .optional(),
  outcome: z.looseObject({ kind: z.string(), code: z.string().optional(), retryable: z.boolean().optional() }).optional(),
  review: z
    .looseObject({ required: z.boolean(), reason: z.string(), resolvedBy: z.string().optional(), note: z.string().optional() })
    .optional(),
  envelope: EnvelopeSchema.optional(),
  lateOutcome: z.looseObject({ kind: z.string(), code: z.string().optional() }).optional(),
});

export const TraceEventSchema = z.looseObject({
  seq: z.number().int(),
  at: z.string(),
  runId: z.string(),
  operationId: z.string().optional(),
  callId: z.string().optional(),
  type: z.string(),
  from: z.string().optional(),
  to: z.string().optional(),
  attempt: z.number().int().optional(),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export const TraceSchema = z.looseObject({ events: z.array(TraceEventSchema) });

export const ToolsSchema = z.looseObject({ format: ToolFormatSchema, tools: z.array(z.record(z.string(), z.unknown())) });

export const ApprovalSchema = z.looseObject({
  approvalId: z.string(),
  operationId: z.string(),
  runId: z.string(),
  toolName: z.string(),
  arguments: z.unknown().optional(),
  inputHash: z.string(),
  requestedBy: z.string(),
  expiresAt: z.string(),
  /** Where configured policies decided the call: their determining ids. */
  policies: PolicyIdsSchema.optional(),
  /** The tool's `describeForApproval` lines for these arguments, as the approval page shows them. */
  summary: z.array(z.string()).optional(),
  /** The arguments as the approval page shows them: the tool's `secretFields` and card-like numbers masked, long strings folded. */
  argumentFields: z
    .array(
      z.looseObject({
        path: z.string(),
        text: z.string(),
        shown: z.enum(['exact', 'secret', 'card', 'folded']),
        bytes: z.number().int().optional(),
      }),
    )
    .optional(),
  url: z.string(),
  /** The `approvalEscalation` steps sent so far: when, who was asked for the first time, who was reminded. */
  escalations: z
    .array(z.looseObject({ step: z.number(), at: z.string(), escalated: z.array(z.string()), reminded: z.array(z.string()) }))
    .optional(),
});
export const ApprovalsSchema = z.looseObject({ approvals: z.array(ApprovalSchema), nextCursor: z.string().optional() });

export const DecisionResultSchema = z.looseObject({ approvalId: z.string(), operationId: z.string(), state: z.string() });

/** A run as its owner sees it: `status` (`open`, `cancelled`, `budget_exhausted`, `expired`), `budgets` and `usage`. */
export type Run = z.infer<typeof RunSchema>;
/** A run in the runs list: its id, status, owner, creation time and usage. */
export type RunSummary = z.infer<typeof RunSummarySchema>;
/** An operation record (one logical tool call): its lifecycle `state`, attempts, approval, outcome and, once reported, its envelope. */
export type Operation = z.infer<typeof OperationSchema>;
/** An operation not reported within the wait: its id, `state` and the URL to read it from. */
export type Pending = z.infer<typeof PendingSchema>;
/** One trace event as the API returns it. */
export type TraceEventView = z.infer<typeof TraceEventSchema>;
/** A pending approval as an approver lists it, with a link signed for that approver. */
export type Approval = z.infer<typeof ApprovalSchema>;

export const PreviewResultSchema = z.looseObject({
  decision: z.enum(['allow', 'deny', 'require_approval']),
  code: z.string().optional(),
  message: z.string(),
  /** Where configured policies decided: the determining policy ids of the tool action and of its unattended action. */
  policies: PolicyIdsSchema.optional(),
  inputHash: z.string(),
});
export const ReviewsSchema = z.looseObject({
  reviews: z.array(
    z.looseObject({
      operationId: z.string(),
      runId: z.string(),
      toolName: z.string(),
      reason: z.string(),
      since: z.string(),
      resolveUrl: z.string(),
    }),
  ),
});
