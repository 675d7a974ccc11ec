import type { z } from 'zod';
import { withClock } from '../core/budgets';
import type { Principal, RunRecord } from '../core/model';
import { hasRole } from '../core/policy';
import type { RunStore, WithStore } from '../core/ports';
import { encodeCursor, type RunListKey } from './cursor';
import type { RunsSchema, RunStatusSchema } from '../http/schemas';
import { runView } from './views';

/**
 * `GET /v1/runs`: one page of runs, newest first. Agents see their own runs; reviewers and admins see all.
 * The status filtered on is the one `GET /v1/runs/{runId}` shows (a run past its wall clock is `expired`).
 */
export async function listRunsPage(
  deps: Pick<WithStore<RunStore>, 'store' | 'now'>,
  principal: Principal,
  query: { status?: z.infer<typeof RunStatusSchema>; limit: number; after?: RunListKey },
): Promise<z.input<typeof RunsSchema>> {
  const now = deps.now();
  const seesAll = hasRole(principal, 'reviewer');
  const matches = (run: RunRecord) =>
    (seesAll || run.principalId === principal.id) && (!query.status || withClock(run, now).status === query.status);
  const page = await deps.store.listRuns({ limit: query.limit, after: query.after, matches });
  return {
    runs: page.items.map((run) => {
      const view = runView(run, now);
      return { runId: view.runId, status: view.status, owner: run.principalId, createdAt: view.createdAt, usage: view.usage };
    }),
    nextCursor: page.nextKey ? encodeCursor(page.nextKey as RunListKey) : undefined,
  };
}
