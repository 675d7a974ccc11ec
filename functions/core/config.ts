import { z } from 'zod';

/** The principals file (TOOLRUNNER_CONFIG locally, a secret on AWS), parsed once per change. */
export const PrincipalSchema = z.object({
  id: z.string().min(1),
  key: z.string().min(16),
  roles: z.array(z.enum(['agent', 'approver', 'reviewer', 'admin'])).min(1),
  tools: z.union([z.literal('*'), z.array(z.string())]),
});

export const RunnerConfigSchema = z.object({
  principals: z.array(PrincipalSchema),
  approvalSecret: z.string().min(16).optional(),
  approvalTtlSeconds: z.number().int().min(1).max(365 * 86400).default(86400),
  /** Days a run, its operations and its trace are kept after the run's wall-clock deadline (DynamoDB TTL). */
  retentionDays: z.number().int().min(1).max(3650).optional(),
});

export type RunnerConfig = z.infer<typeof RunnerConfigSchema>;
