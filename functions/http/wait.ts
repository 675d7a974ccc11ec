import { z } from 'zod';

/** The longest a request waits for its answer (`Prefer: wait`, MCP's wait): API Gateway gives up at 29 s. */
export const LONGEST_WAIT_SECONDS = 25;

/**
 * The longest wait this deployment allows. The construct sets `TOOLRUNNER_MAX_WAIT_SECONDS` from the API
 * function's concurrency ceiling and the stage's rate limit (ceiling / rate), so waiting callers arriving at the
 * full rate never hold more instances than the ceiling; locally it is `LONGEST_WAIT_SECONDS`.
 */
export function maxWaitSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const parsed = z.coerce
    .number()
    .int()
    .min(0)
    .max(LONGEST_WAIT_SECONDS)
    .default(LONGEST_WAIT_SECONDS)
    .safeParse(env.TOOLRUNNER_MAX_WAIT_SECONDS);
  if (!parsed.success)
    throw new Error(
      `TOOLRUNNER_MAX_WAIT_SECONDS: a whole number from 0 to ${LONGEST_WAIT_SECONDS} (got ${env.TOOLRUNNER_MAX_WAIT_SECONDS})`,
    );
  return parsed.data;
}
