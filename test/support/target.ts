import { z } from 'zod';
import type { HandlerMode } from '../../local/handlers';

/**
 * Which stack the e2e suite drives. `embedded` (default) starts the local stack in-process; `bundled` is the
 * same stack with every Lambda handler loaded from the bundle CDK deploys (bundling and minification
 * faults show there); `template` builds the stack from the synthesized CDK app (functions in workers with
 * their template environment, IAM checked, routes and state machines from the template); `localstack` and
 * `aws` point the same tests at a deployed stack (not reachable from this machine).
 */
export const Target = z
  .enum(['embedded', 'bundled', 'template', 'localstack', 'aws'])
  .default('embedded')
  .parse(process.env.TARGET || undefined);

/** Which handlers the embedded stack runs (`TOOLRUNNER_HANDLERS` of `npm start`). */
export const handlerMode = ({ embedded: 'source', bundled: 'bundled', template: 'template' } as const)[
  Target as 'embedded' | 'bundled' | 'template'
] as HandlerMode | undefined;

/** The tests start the stack themselves (on the run's DynamoDB Local). */
export const isEmbedded = handlerMode !== undefined;

/**
 * A changed principals file applies to the very next check. Not so where the functions read the config
 * secret (template mode, AWS): they keep it up to 30 s, as the construct documents.
 */
export const configEditsApplyAtOnce = Target === 'embedded' || Target === 'bundled';

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
