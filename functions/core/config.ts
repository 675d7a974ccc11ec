import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ApprovalEscalationSchema, escalationProblems } from './escalation';
import { isLoopbackAddress } from './loopback';
import { isTokenPrincipal, TOKEN_PRINCIPAL_PREFIX } from './policy';
import { SpendLimitSchema, spendLimitIssues } from './spend-limits';

/**
 * Where an approver's approval requests are POSTed. HTTPS, because each request carries a link that decides
 * as that approver; plain HTTP only to this machine (a local receiver, the tests).
 */
export const WebhookUrlSchema = z.url().refine((text) => {
  const url = new URL(text);
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackAddress(url.hostname));
}, 'a webhook URL must be https:// (http:// only to localhost, 127.0.0.1 or [::1])');

/** An approver's own channel: `approval.requested` POSTs signed with `secret` (core/webhook-signature.ts). */
export const NotifySchema = z.strictObject({
  webhookUrl: WebhookUrlSchema,
  /** Shared with the receiver only; at least 16 characters. Never the configuration's `approvalSecret`. */
  secret: z.string().min(16).max(512),
});

const SlackIdSchema = z.string().regex(/^[A-Z0-9]{2,32}$/, 'a Slack id is upper-case letters and digits, e.g. U024BE7LH');

/**
 * Approvals in Slack (functions/slack): the bot's token, the app's signing secret (interactions are
 * authenticated by it alone), the one workspace it answers, and optionally one channel instead of each
 * approver's direct messages. `apiUrl` is Slack's Web API base, https (http only to this machine, for tests).
 */
export const SlackSchema = z.strictObject({
  botToken: z.string().regex(/^xoxb-[A-Za-z0-9-]{8,250}$/, 'a bot token starts with xoxb-'),
  signingSecret: z.string().min(16).max(256),
  teamId: z.string().regex(/^T[A-Z0-9]{2,32}$/, 'a Slack workspace id starts with T, e.g. T0123ABCD'),
  channel: SlackIdSchema.optional(),
  apiUrl: WebhookUrlSchema.optional(),
});

export const RoleSchema = z.enum(['agent', 'approver', 'reviewer', 'admin']);
const ToolListSchema = z.union([z.literal('*'), z.array(z.string())]);

/**
 * The principals file (TOOLRUNNER_CONFIG locally, a secret on AWS), parsed once per change. A principal is
 * reached by its bearer `key`, by an access token whose `<iss>|<claim>` equals its `oauthSubject`, or both.
 */
export const PrincipalSchema = z
  .object({
    id: z.string().min(1),
    key: z.string().min(16).optional(),
    /** The hex SHA-256 of the key, instead of the key (`toolrunner keys hash`): a leaked document then opens nothing. */
    keySha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'keySha256 is the hex SHA-256 of the key: 64 lower-case hex digits')
      .optional(),
    oauthSubject: z.string().min(3).max(1000).optional(),
    roles: z.array(RoleSchema).min(1),
    tools: ToolListSchema,
    notify: NotifySchema.optional(),
    /** The principal's Slack member id (`U…`): its approval requests arrive in Slack and its clicks decide as it. */
    slackUserId: SlackIdSchema.optional(),
    /** What policies see of this principal besides its roles (`principal.<name>`): flat names, simple values. */
    attributes: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'an attribute name is a Cedar identifier: letters, digits, _'),
        z.union([
          z.string().max(1000),
          z
            .number()
            .int()
            .min(-(2 ** 53) + 1)
            .max(2 ** 53 - 1),
          z.boolean(),
          z.array(z.string().max(1000)).max(100),
        ]),
      )
      .refine((a) => !('roles' in a), "roles is the principal's own; choose another attribute name")
      .optional(),
  })
  .refine((p) => p.key !== undefined || p.keySha256 !== undefined || p.oauthSubject !== undefined, {
    message: 'a principal needs a key (or its keySha256), an oauthSubject, or both',
    path: ['key'],
  })
  .refine((p) => p.key === undefined || p.keySha256 === undefined, {
    message: 'a principal has a key or its keySha256, not both',
    path: ['keySha256'],
  });

/**
 * The API and `/mcp` as an OAuth 2.1 resource server (beside bearer keys): access tokens from `issuer`,
 * checked against its JWKS (found through its metadata, or `jwksUri`). docs/security.md has the rules.
 */
export const OAuthSchema = z.strictObject({
  issuer: z.url(),
  /** The `aud` a token must contain; by default the resource URL (the public base URL, or it with `/mcp`). */
  audience: z.string().min(1).optional(),
  /** The claim that names the person or workload: `oauth:<claim>` unless a principal's `oauthSubject` matches. */
  principalClaim: z.string().min(1).default('sub'),
  /** A claim holding role names (a list, or a space-separated string). */
  rolesClaim: z.string().min(1).optional(),
  /** Roles granted by scopes (`scope` or `scp`), e.g. `{ "toolrunner/agent": ["agent"] }`. */
  scopeRoles: z.record(z.string(), z.array(RoleSchema)).optional(),
  /** The tools a token's principal may call (default none). */
  tools: ToolListSchema.default([]),
  /** Clients whose access tokens name them in `client_id` instead of `aud` (Cognito). */
  clientIds: z.array(z.string().min(1)).optional(),
  jwksUri: z.url().optional(),
});

/** The policy of one tool served by an upstream MCP server (the runner cannot know it from the upstream). */
export const UpstreamToolPolicySchema = z.strictObject({
  risk: z.enum(['read', 'reversible_write', 'irreversible_write']),
  approval: z.enum(['always', 'never']).optional(),
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(15 * 60_000)
    .optional(),
  maxAttempts: z.number().int().min(1).max(10).optional(),
  supportsIdempotency: z.boolean().optional(),
});

/** Proxy mode: an MCP server whose tools the runner registers as `<name>__<tool>`. */
export const McpUpstreamSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9-]{1,24}$/, 'letters, digits and dashes, at most 24: tool names become <name>__<tool>'),
  url: z.url(),
  headers: z.record(z.string(), z.string()).optional(),
  tools: z.record(z.string(), UpstreamToolPolicySchema).optional(),
  defaultPolicy: UpstreamToolPolicySchema.optional(),
});
/**
 * A rate limit on tool calls (core/rate-limits.ts; docs/reference/config.md "Rate limits"). `tool` and
 * `principal`: omitted counts all together, `"*"` each on its own, a name only that one.
 */
export const RateLimitSchema = z
  .strictObject({
    tool: z.string().min(1).max(200).optional(),
    /** Model calls (`<provider>/<model>` as reserved, or `"*"` each model on its own): the entry counts model calls only. */
    model: z.string().min(1).max(300).optional(),
    principal: z.string().min(1).max(1000).optional(),
    /** Calls admitted per UTC minute. */
    perMinute: z.number().int().min(1).max(1_000_000).optional(),
    /** Calls in flight at once (admitted, not yet settled). A refused call tries every slot: a write each. */
    concurrent: z.number().int().min(1).max(100).optional(),
  })
  .refine((l) => l.perMinute !== undefined || l.concurrent !== undefined, {
    message: 'a rate limit needs perMinute, concurrent or both',
  })
  .refine((l) => l.model === undefined || l.tool === undefined, { message: 'a rate limit names a tool or a model, not both' })
  // Why: a model call holds no slot to free (its settlement may never come); its lease already bounds it.
  .refine((l) => l.model === undefined || l.concurrent === undefined, { message: 'a rate limit on model calls takes perMinute only' });

/** A model's price set by config, per million tokens in cents; cached input tokens are part of input tokens. */
export const ModelPriceSchema = z.strictObject({
  inputPerMillionCents: z.number().min(0).max(1_000_000),
  outputPerMillionCents: z.number().min(0).max(1_000_000),
  cachedInputPerMillionCents: z.number().min(0).max(1_000_000).optional(),
});

/** How long a model call's reservation holds before it is charged in full (seconds). */
export const DEFAULT_MODEL_CALL_LEASE_SECONDS = 600;

/**
 * The longest approval wait. An execution that waits for a person must still have time left, when the
 * approval comes, for the attempts, backoffs and reconciliation after it: the state machine's
 * `TimeoutSeconds` (statemachines/invocation.asl.json) must exceed this by `APPROVAL_EXECUTION_MARGIN_SECONDS`.
 * A day of margin is far more than any tool's deadline (minutes), so an approved call never dies of the
 * execution timeout; a week is still a long time to wait for a person.
 */
export const MAX_APPROVAL_TTL_SECONDS = 7 * 86400;
export const APPROVAL_EXECUTION_MARGIN_SECONDS = 86400;

/** `mcpRunIdleMinutes` when the config document sets none: a principal's current MCP run is replaced after an idle hour. */
export const DEFAULT_MCP_RUN_IDLE_MINUTES = 60;

/** An exact web origin, `scheme://host[:port]`, as a browser sends it in `Origin` (no path, no trailing slash). */
export const OriginSchema = z.string().refine((text) => {
  try {
    return new URL(text).origin === text;
  } catch {
    return false;
  }
}, 'an origin is scheme://host[:port], lower case, with no path or trailing slash');

/** Top-level keys the runner does not know: a misspelt setting would otherwise be dropped and its default apply. */
function unknownKeys(issue: { code?: string; keys?: string[] }): string | undefined {
  if (issue.code !== 'unrecognized_keys' || !issue.keys) return undefined;
  const names = issue.keys.map((k) => JSON.stringify(k)).join(', ');
  return `unknown config key${issue.keys.length === 1 ? '' : 's'} ${names} (docs/reference/config.md lists the settings)`;
}

export const RunnerConfigSchema = z
  .strictObject(
    {
      principals: z.array(PrincipalSchema),
      approvalSecret: z.string().min(16).optional(),
      approvalTtlSeconds: z.number().int().min(1).max(MAX_APPROVAL_TTL_SECONDS).default(86400),
      /** Reminders and escalation of approvals still waiting (core/escalation.ts; docs/operate.md). */
      approvalEscalation: ApprovalEscalationSchema.optional(),
      /** Days a run, its operations and its trace are kept after the run's wall-clock deadline (DynamoDB TTL). */
      retentionDays: z.number().int().min(1).max(3650).optional(),
      mcpUpstreams: z.array(McpUpstreamSchema).optional(),
      /** Web origins, besides `/mcp`'s own, whose pages may call `/mcp` (DNS-rebinding protection; http/request-origin.ts). */
      mcpAllowedOrigins: z.array(OriginSchema).max(100).optional(),
      /**
       * Minutes without calls after which a principal's current MCP run (2026-07-28 clients that name no run) is
       * replaced by a new one; default 60 (`DEFAULT_MCP_RUN_IDLE_MINUTES`).
       */
      mcpRunIdleMinutes: z.number().int().min(1).max(10080).optional(),
      oauth: OAuthSchema.optional(),
      rateLimits: z.array(RateLimitSchema).max(100).optional(),
      /** Model prices by `<provider>/<model>`, before the prices bundled with the runner. */
      modelPrices: z.record(z.string().regex(/^[^/\s]+\/\S+$/, 'a model is named "<provider>/<model>"'), ModelPriceSchema).optional(),
      /** Seconds a model call's reservation holds; after it the reservation is charged in full. */
      modelCallLeaseSeconds: z.number().int().min(30).max(3600).optional(),
      /** Spend per principal and UTC day or month across runs (core/spend-limits.ts). */
      spendLimits: z.array(SpendLimitSchema).max(1000).optional(),
      /** Cedar policies deciding who may call what and what needs a person (docs/policies.md); without them, roles and tool lists decide. */
      policies: z.string().min(1).max(1_000_000).optional(),
      /** The same, from a file (relative to the configuration file's folder; on AWS, to the functions' asset). */
      policiesFile: z.string().min(1).max(4096).optional(),
      slack: SlackSchema.optional(),
    },
    { error: unknownKeys },
  )
  .refine((config) => config.policies === undefined || config.policiesFile === undefined, {
    message: 'policies or policiesFile, not both',
    path: ['policiesFile'],
  })
  .superRefine((config, ctx) => {
    // One entry per scope: two would share a counter (core/rate-limits.ts `scopeOf`) and count each call twice.
    const scopes = new Set<string>();
    for (const [index, limit] of (config.rateLimits ?? []).entries()) {
      const scope = JSON.stringify([limit.tool ?? null, limit.model ?? null, limit.principal ?? null]);
      if (scopes.has(scope))
        ctx.addIssue({
          code: 'custom',
          path: ['rateLimits', index],
          message: 'another rate limit has this tool and principal: put perMinute and concurrent in one entry',
        });
      scopes.add(scope);
    }
    // One id, one principal: every decision after authentication finds a principal by its id (core/policy.ts),
    // so a second entry with it would act with the first one's roles and see its runs. `oauth:` ids are the
    // token principals no entry maps; an entry with one would be mistaken for such a token's principal.
    const firstWithId = new Map<string, number>();
    for (const [index, principal] of config.principals.entries()) {
      if (isTokenPrincipal(principal.id))
        ctx.addIssue({
          code: 'custom',
          path: ['principals', index, 'id'],
          message: `${JSON.stringify(principal.id)}: the id prefix ${TOKEN_PRINCIPAL_PREFIX} is reserved for token principals (${TOKEN_PRINCIPAL_PREFIX}<claim>); choose another id`,
        });
      const first = firstWithId.get(principal.id);
      if (first !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['principals', index, 'id'],
          message: `another principal has the id ${JSON.stringify(principal.id)} (principals.${first}): ids must be unique`,
        });
      else firstWithId.set(principal.id, index);
    }
    // A click in Slack decides as the one principal its member id maps to.
    const firstWithSlackId = new Map<string, number>();
    for (const [index, principal] of config.principals.entries()) {
      if (principal.slackUserId === undefined) continue;
      const first = firstWithSlackId.get(principal.slackUserId);
      if (first !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['principals', index, 'slackUserId'],
          message: `another principal has the slackUserId ${JSON.stringify(principal.slackUserId)} (principals.${first}): each Slack member is one principal`,
        });
      else firstWithSlackId.set(principal.slackUserId, index);
    }
    for (const issue of spendLimitIssues(config.spendLimits ?? [], new Set(config.principals.map((p) => p.id))))
      ctx.addIssue({ code: 'custom', path: ['spendLimits', issue.index], message: issue.message });
    for (const problem of escalationProblems(config))
      ctx.addIssue({ code: 'custom', path: ['approvalEscalation', problem.index], message: problem.message });
    // Every webhook receiver holds its approver's notify.secret: it must open nothing else.
    for (const [index, principal] of config.principals.entries()) {
      const secret = principal.notify?.secret;
      if (secret !== undefined && (secret === principal.key || secret === config.approvalSecret))
        ctx.addIssue({
          code: 'custom',
          path: ['principals', index, 'notify', 'secret'],
          message: "notify.secret must be its own: not the principal's key, not approvalSecret",
        });
    }
  });

export type RunnerConfig = z.infer<typeof RunnerConfigSchema>;
export type NotifyConfig = z.infer<typeof NotifySchema>;
/** The `slack` section of the config document (docs/operate.md, "Approvals in Slack"). */
export type SlackConfig = z.infer<typeof SlackSchema>;
/** One entry of the config's `rateLimits` (docs/reference/config.md "Rate limits"). */
export type RateLimit = z.infer<typeof RateLimitSchema>;
export type McpUpstream = z.infer<typeof McpUpstreamSchema>;
export type UpstreamToolPolicy = z.infer<typeof UpstreamToolPolicySchema>;
/** The `oauth` section of the config document (and of the construct's `oauth` prop): see docs/reference/config.md. */
export type OAuthConfig = z.infer<typeof OAuthSchema>;

/**
 * The same principals document with every `key` replaced by its `keySha256`, for a deployed secret that must
 * authenticate without holding a usable key (`toolrunner keys hash`). The rest of the document is kept as is.
 */
export function withHashedKeys(document: unknown): unknown {
  const parsed = RunnerConfigSchema.safeParse(document);
  if (!parsed.success)
    throw new Error(`not a valid config document: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const raw = document as { principals: Record<string, unknown>[] };
  return {
    ...raw,
    principals: raw.principals.map(({ key, ...rest }) =>
      typeof key === 'string' ? { ...rest, keySha256: createHash('sha256').update(key).digest('hex') } : rest,
    ),
  };
}
