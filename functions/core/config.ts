import { z } from 'zod';

/** The principals file (TOOLRUNNER_CONFIG locally, a secret on AWS), parsed once per change. */
export const PrincipalSchema = z.object({
  id: z.string().min(1),
  key: z.string().min(16),
  roles: z.array(z.enum(['agent', 'approver', 'reviewer', 'admin'])).min(1),
  tools: z.union([z.literal('*'), z.array(z.string())]),
});

/**
 * The longest approval wait. An execution that waits for a person must still have time left, when the
 * approval comes, for the attempts, backoffs and reconciliation after it: the state machine's
 * `TimeoutSeconds` (statemachines/invocation.asl.json) must exceed this by `APPROVAL_EXECUTION_MARGIN_SECONDS`.
 * A day of margin is far more than any tool's deadline (minutes), so an approved call never dies of the
 * execution timeout; a week is still a long time to wait for a person.
 */
export const MAX_APPROVAL_TTL_SECONDS = 7 * 86400;
export const APPROVAL_EXECUTION_MARGIN_SECONDS = 86400;

export const RunnerConfigSchema = z.object({
  principals: z.array(PrincipalSchema),
  approvalSecret: z.string().min(16).optional(),
  approvalTtlSeconds: z.number().int().min(1).max(MAX_APPROVAL_TTL_SECONDS).default(86400),
});

export type RunnerConfig = z.infer<typeof RunnerConfigSchema>;
