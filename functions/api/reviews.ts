import type { ReviewQueries, WithStore } from '../core/ports';

const MAX_REVIEWS = 200;

/**
 * `GET /v1/reviews?status=open`: every operation waiting for a person's resolution, so the
 * "request_human_review" an envelope offers leads somewhere.
 */
export async function openReviews(deps: Pick<WithStore<ReviewQueries>, 'store'>) {
  const open = await deps.store.listOpenReviews(MAX_REVIEWS);
  return {
    reviews: open.map((op) => ({
      operationId: op.operationId,
      runId: op.runId,
      toolName: op.toolName,
      reason: op.review?.reason ?? 'the outcome is unknown',
      // The index orders by updatedAt; an open review is not written again until someone resolves it.
      since: op.updatedAt,
      resolveUrl: `/v1/operations/${op.operationId}/resolve`,
    })),
  };
}
