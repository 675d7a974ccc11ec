import { z } from 'zod';

/**
 * Which stack the e2e suite drives. `embedded` (default) starts the local stack in-process; `bundled` is the
 * same stack with every Lambda handler loaded from the bundle CDK deploys (bundling and minification
 * faults show there); `localstack` and `aws` point the same tests at a deployed stack (not reachable from
 * this machine).
 */
export const Target = z
  .enum(['embedded', 'bundled', 'localstack', 'aws'])
  .default('embedded')
  .parse(process.env.TARGET || undefined);

/** The tests start the stack themselves (on the run's DynamoDB Local). */
export const isEmbedded = Target === 'embedded' || Target === 'bundled';

/** Which handlers the embedded stack runs. */
export const handlerMode = Target === 'bundled' ? 'bundled' : 'source';

/** For a deployed stack: where it is and the keys of its principals (one per role, plus a second agent). */
export function deployedTarget() {
  const env = z
    .object({
      TOOLRUNNER_API_URL: z.string().url(),
      TOOLRUNNER_SANDBOX_URL: z.string().url(),
      TOOLRUNNER_KEYS: z
        .string()
        .transform((s) =>
          z
            .object({ agent: z.string(), approver: z.string(), reviewer: z.string(), admin: z.string(), other: z.string() })
            .parse(JSON.parse(s)),
        ),
    })
    .parse(process.env);
  return {
    apiUrl: env.TOOLRUNNER_API_URL.replace(/\/$/, ''),
    sandboxUrl: env.TOOLRUNNER_SANDBOX_URL.replace(/\/$/, ''),
    keys: env.TOOLRUNNER_KEYS,
  };
}
